import { SwitchboardError } from "./errors.js";

export type Platform = "slack" | "discord" | "console";

/**
 * Where a conversation lives, typed. Every platform thread is one session; its key is the
 * encoded form ("slack:T1:C1:1712345678.000100", "discord:G1:THREAD_ID", "discord:dm:CH",
 * "console:local"). Platform ids never contain ":", so the parts split back exactly.
 */
export type ThreadRef =
  | { platform: "slack"; team: string; channel: string; thread: string }
  /** `guild` is "dm" for direct messages; `channel` is the thread or DM channel the bot writes in. */
  | { platform: "discord"; guild: string; channel: string }
  | { platform: "console"; name: string };

/** The encoded ThreadRef: the session key, the lock key, the dedupe scope. */
export type ThreadKey = string;

const PARTS: Record<Platform, number> = { slack: 4, discord: 3, console: 2 };

export function encodeThread(ref: ThreadRef): ThreadKey {
  const parts =
    ref.platform === "slack"
      ? [ref.team, ref.channel, ref.thread]
      : ref.platform === "discord"
        ? [ref.guild, ref.channel]
        : [ref.name];
  for (const part of parts) {
    if (part === "" || part.includes(":"))
      throw new SwitchboardError("internal", `A ${ref.platform} thread id cannot be "${part}".`);
  }
  return [ref.platform, ...parts].join(":");
}

export function decodeThread(key: ThreadKey): ThreadRef {
  const [platform, a, b, c, ...rest] = key.split(":");
  const bad = () => new SwitchboardError("internal", `"${key}" is not a thread key Switchboard writes.`);
  if (!isPlatform(platform) || rest.length > 0) throw bad();
  const parts = [a, b, c].filter((p): p is string => p !== undefined);
  if (parts.length !== PARTS[platform] - 1 || parts.some((p) => p === "")) throw bad();
  if (platform === "slack") return { platform, team: a ?? "", channel: b ?? "", thread: c ?? "" };
  if (platform === "discord") return { platform, guild: a ?? "", channel: b ?? "" };
  return { platform, name: a ?? "" };
}

/** The platform of a key without decoding the rest (keys written by older versions included). */
export function platformOf(key: ThreadKey): Platform | undefined {
  const head = key.slice(0, key.indexOf(":"));
  return isPlatform(head) ? head : undefined;
}

function isPlatform(s: string | undefined): s is Platform {
  return s === "slack" || s === "discord" || s === "console";
}
