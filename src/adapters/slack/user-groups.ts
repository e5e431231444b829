import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";

/** Whether `user` is a member of one of the user groups (usergroups.users.list, scope usergroups:read). */
export async function inGroups(web: WebClient, user: string, groups: string[]): Promise<boolean> {
  for (const usergroup of groups) {
    try {
      const res = await web.usergroups.users.list({ usergroup });
      if (res.users?.includes(user)) return true;
    } catch (err) {
      log.warn({ err, usergroup }, "could not read a user group's members; its members are not approvers");
    }
  }
  return false;
}
