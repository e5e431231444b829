/**
 * Resolves once `log` (an emulator's request log) has not grown for `quietMs`. A test that
 * checks that something did NOT happen waits for this first: a fire-and-forget write (a
 * Discord rename, say) reaches the emulator some time after the call that started it.
 */
export async function untilQuiet(
  log: { readonly length: number },
  opts: { quietMs?: number; timeoutMs?: number } = {},
): Promise<void> {
  const quietMs = opts.quietMs ?? 500;
  const deadline = Date.now() + (opts.timeoutMs ?? 15_000);
  let seen = log.length;
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    if (Date.now() > deadline) throw new Error(`the request log never went quiet for ${quietMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
    if (log.length !== seen) {
      seen = log.length;
      since = Date.now();
    }
  }
}
