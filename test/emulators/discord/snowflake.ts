const DISCORD_EPOCH = 1_420_070_400_000n;
let increment = 0n;

/** A real-shaped snowflake (17-19 digits): timestamp << 22 | counter. */
export function snowflake(at = Date.now()): string {
  increment = (increment + 1n) % 4096n;
  return (((BigInt(at) - DISCORD_EPOCH) << 22n) | increment).toString();
}
