import { expect } from "vitest";
import { openStore } from "../../src/store/index.js";
import { TurnLedger } from "../../src/store/turns.js";

/** After a crash and a recovery: SQLite's own integrity check passes and no turn is left pending. */
export async function expectStoreIntact(url: string): Promise<void> {
  const store = await openStore(url);
  try {
    expect(await store.sql?.query("PRAGMA integrity_check", [])).toEqual([{ integrity_check: "ok" }]);
    expect(await new TurnLedger(store).pending()).toEqual([]);
  } finally {
    await store.close();
  }
}
