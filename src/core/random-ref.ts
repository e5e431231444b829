import { randomFillSync } from "node:crypto";

/*
 * Random refs (the values of Stop, approval and form buttons, call ids the model did not
 * give) cut from the OS's random bytes taken 4 KiB at a time. Node's randomBytes asked for
 * nine bytes makes a trip into OpenSSL each time: about 2 µs a call in a loop and 50 µs
 * once amid other work on a 2-core AMD EPYC, where each answer takes one (its Stop
 * button's): 15 ms of a Slack crowd's first 1.5 s of CPU in the load benchmark's profile.
 * The bytes are as random (the same source); each is handed out once.
 */
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let at = POOL_BYTES;

/** `bytes` random bytes (at most 4,096) in base64url: 12 characters for the default 9. */
export function randomRef(bytes = 9): string {
  if (at + bytes > POOL_BYTES) {
    randomFillSync(pool);
    at = 0;
  }
  const ref = pool.toString("base64url", at, at + bytes);
  at += bytes;
  return ref;
}
