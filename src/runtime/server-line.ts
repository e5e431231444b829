import type { ServerStatus } from "../mcp/types.js";
import { seconds } from "../signals.js";

/** One server as `/tools` and `reconnect` show it: its state, why it is down, and when it is tried again. */
export function serverLine(s: ServerStatus): string {
  if (s.perUser) {
    const known = s.toolCount > 0 ? `${s.toolCount} tools` : "tools known once someone signs in";
    return `• ${s.name} (${s.transport}): each person signs in as themselves, ${known}; ${s.perUser.open} signed-in connection${s.perUser.open === 1 ? "" : "s"} open here`;
  }
  const state = s.state === "connected" ? `connected, ${s.toolCount} tools` : s.state;
  // A restarting server's error says when already.
  const retry =
    s.state !== "failed" || s.retryInMs === undefined
      ? ""
      : `; trying again in ${seconds(Math.max(1_000, Math.ceil(s.retryInMs / 1_000) * 1_000))}`;
  const why = s.error ? ` (${s.error}${retry})` : retry ? ` (${retry.slice(2)})` : "";
  return `• ${s.name} (${s.transport}): ${state}${why}`;
}
