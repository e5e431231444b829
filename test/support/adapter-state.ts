import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../src/store/index.js";
import { createState, type StateStore } from "../../src/store/state.js";

/** The adapters' state on a real SQLite file of its own, as one process would have it. */
export async function adapterState(): Promise<{ state: StateStore; store: { close(): Promise<void> } }> {
  const dir = mkdtempSync(join(tmpdir(), "sb-adapter-state-"));
  const store = await openStore(`sqlite://${join(dir, "state.sqlite")}`);
  return {
    state: createState(store),
    store: {
      async close() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    },
  };
}
