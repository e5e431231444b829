import type { ServerResponse } from "node:http";
import { type Params, sendJson, str } from "./http-util.js";
import { BOT_USER_ID, type EmuMessage, type SlackState } from "./state.js";

/** A slash command's `response_url`: 5 uses in 30 minutes (PLATFORMS.md), then `used_url`. */
export class ResponseUrls {
  private readonly urls = new Map<string, { channel: string; user: string; uses: number }>();
  private seq = 0;

  constructor(
    private readonly state: SlackState,
    private readonly echo: (m: EmuMessage) => void,
  ) {}

  /** A new URL's id, for a command `user` ran in `channel`. */
  issue(channel: string, user: string): string {
    this.seq += 1;
    const id = `R${this.seq}`;
    this.urls.set(id, { channel, user, uses: 0 });
    return id;
  }

  /** A post to the URL: in the channel (`response_type: in_channel`) or to its user alone. */
  respond(res: ServerResponse, id: string, body: Params): void {
    const entry = this.urls.get(id);
    if (!entry) {
      sendJson(res, 404, { ok: false, error: "expired_url" });
      return;
    }
    entry.uses += 1;
    if (entry.uses > 5) {
      sendJson(res, 404, { ok: false, error: "used_url" });
      return;
    }
    this.state.responses.push({ id, body });
    const text = str(body, "text") ?? "";
    const blocks = Array.isArray(body.blocks) ? body.blocks : undefined;
    if (str(body, "response_type") === "in_channel") {
      const m = this.state.addMessage({
        channel: entry.channel,
        user: BOT_USER_ID,
        bot_id: "B_BOT",
        text,
        blocks,
      });
      this.echo(m);
    } else {
      this.state.ephemerals.push({
        channel: entry.channel,
        user: entry.user,
        text,
        blocks,
        via: "response_url",
        shown: true,
      });
    }
    sendJson(res, 200, { ok: true });
  }
}
