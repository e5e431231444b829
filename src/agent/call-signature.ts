import type { ToolCall } from "../core/messages.js";

/** Stable identity of a call, so `{a:1,b:2}` and `{b:2,a:1}` count as the same call. */
export function callSignature(call: ToolCall): string {
  return `${call.name}\u0000${stableJson(call.arguments)}`;
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
