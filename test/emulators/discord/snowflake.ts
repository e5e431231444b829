import { randomBytes } from "node:crypto";

const DISCORD_EPOCH = 1_420_070_400_000n;
let increment = 0n;

/** A real-shaped snowflake (17-19 digits): timestamp << 22 | counter. */
export function snowflake(at = Date.now()): string {
  increment = (increment + 1n) % 4096n;
  return (((BigInt(at) - DISCORD_EPOCH) << 22n) | increment).toString();
}

/**
 * An interaction token shaped as Discord's: base64 of `interaction:<id>:<secret>`, so every
 * token starts with the same 16 characters (`aW50ZXJhY3Rpb246`, "interaction:") and only its
 * whole tells two interactions apart.
 */
export function interactionToken(id: string): string {
  return Buffer.from(`interaction:${id}:${randomBytes(96).toString("base64url")}`).toString("base64url");
}
