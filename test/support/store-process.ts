import { createInterface } from "node:readline";
import { openStore } from "../../src/store/index.js";

/**
 * A process with a store open at argv[2], for tests that must see whether the process
 * outlives what happens to its store's server. It writes a value and says "ready"; each
 * "read" line reads it back ("read: <value>" or "read failed: <why>"). At the end of its
 * input it closes the store and exits.
 */
const url = process.argv[2];
if (!url) throw new Error("usage: store-process.ts <store url>");
const store = await openStore(url, { namespace: `test-process-${process.pid}` });
await store.kv.set("value", "written");
process.stdout.write("ready\n");
for await (const line of createInterface({ input: process.stdin })) {
  if (line === "read") {
    const answer = await store.kv.get("value").then(
      (v) => `read: ${String(v)}`,
      (err: unknown) => `read failed: ${err instanceof Error ? err.message : String(err)}`,
    );
    process.stdout.write(`${answer}\n`);
  }
}
await store.kv.delete("value").catch(() => undefined);
await store.close();
