import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Keyv from "keyv";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "./index.js";
import { SqliteConnection, SqliteKeyvAdapter } from "./sqlite.js";
import { CHECKPOINT_EVERY_MS, CHECKPOINTS_START_AFTER_MS, Checkpoints } from "./sqlite-checkpoints.js";

const dirs: string[] = [];
function scratchFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "sb-sqlite-"));
  dirs.push(dir);
  return join(dir, "store.sqlite");
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function connect(file = ":memory:"): SqliteConnection {
  return new SqliteConnection({ file, table: "switchboard", keySize: 1024, busyTimeoutMs: 1_000 });
}

describe("the SQLite store adapter", () => {
  it("reads a file in the format @keyv/sqlite wrote (key, serialized value), namespace included", async () => {
    const file = scratchFile();
    // The table and a row exactly as the earlier driver left them.
    const before = connect(file);
    before.query("CREATE TABLE IF NOT EXISTS switchboard(key VARCHAR(1024) PRIMARY KEY, value TEXT )");
    before.query("INSERT INTO switchboard (key, value) VALUES (?, ?)", [
      "switchboard:session:slack:T1:C1:1.0",
      JSON.stringify({ value: { turns: 3 }, expires: null }),
    ]);
    before.close();
    const store = await openStore(`sqlite://${file}`);
    try {
      expect(await store.kv.get("session:slack:T1:C1:1.0")).toEqual({ turns: 3 });
    } finally {
      await store.close();
    }
  });

  it("answers keyv's calls: many at once in the asked order, deletes that say whether anything went", async () => {
    const adapter = new SqliteKeyvAdapter(connect());
    const kv = new Keyv(adapter, { namespace: "ns" });
    await kv.set("a", 1);
    await kv.set("c", { three: [3] });
    expect(await kv.getMany(["c", "b", "a"])).toEqual([{ three: [3] }, undefined, 1]);
    expect(await kv.has("a")).toBe(true);
    expect(await kv.has("b")).toBe(false);
    expect(await kv.delete("b")).toBe(false);
    expect(await kv.delete("a")).toBe(true);
    expect(await kv.get("a")).toBeUndefined();
    expect(await kv.deleteMany(["x", "y"])).toBe(false);
    expect(await kv.deleteMany(["x", "c"])).toBe(true);
    expect(await kv.get("c")).toBeUndefined();
  });

  it("iterates and clears only its own namespace", async () => {
    const connection = connect();
    const mine = new Keyv(new SqliteKeyvAdapter(connection), { namespace: "mine" });
    const theirs = new Keyv(new SqliteKeyvAdapter(connection), { namespace: "theirs" });
    await mine.set("k1", "v1");
    await mine.set("k2", "v2");
    await theirs.set("k1", "other");
    const seen: Array<[unknown, unknown]> = [];
    for await (const [k, v] of mine.iterator?.("mine") ?? []) seen.push([k, v]);
    expect(seen.sort()).toEqual([
      ["k1", "v1"],
      ["k2", "v2"],
    ]);
    await mine.clear();
    expect(await mine.get("k1")).toBeUndefined();
    expect(await theirs.get("k1")).toBe("other");
  });

  it("binds what node-sqlite3 bound (booleans as 1 / 0, undefined as NULL) and returns RETURNING rows", () => {
    const c = connect();
    c.query("CREATE TABLE t (k TEXT PRIMARY KEY, v)");
    c.query("INSERT INTO t (k, v) VALUES (?, ?), (?, ?), (?, ?)", [
      "yes",
      true,
      "no",
      false,
      "none",
      undefined,
    ]);
    expect(c.query("SELECT k, v FROM t ORDER BY k")).toEqual([
      { k: "no", v: 0 },
      { k: "none", v: null },
      { k: "yes", v: 1 },
    ]);
    expect(c.query("DELETE FROM t WHERE v = ? RETURNING k", [1])).toEqual([{ k: "yes" }]);
    expect(c.query("UPDATE t SET v = 2 WHERE k = ?", ["no"])).toEqual([]);
  });

  it("fails a call after the store is closed with an error, not a crash, and pings false", async () => {
    const store = await openStore(`sqlite://${scratchFile()}`);
    await store.kv.set("k", "v");
    await store.close();
    await expect(store.kv.get("k")).rejects.toThrow(/not open/);
    await expect(store.sql?.query("SELECT 1", [])).rejects.toThrow(/not open/);
    expect(await store.ping()).toBe(false);
  });

  it("copies the WAL back into the file from a worker, the answering connection making no checkpoint", async () => {
    const file = scratchFile();
    const store = await openStore(`sqlite://${file}`);
    try {
      // The worker starts a moment after the store opens; from then on the connection makes none.
      await new Promise((r) => setTimeout(r, CHECKPOINTS_START_AFTER_MS + 200));
      for (let i = 0; i < 500; i++) await store.kv.set(`k${i}`, "x".repeat(2_000));
      const written = statSync(file).size;
      const deadline = Date.now() + 3 * CHECKPOINT_EVERY_MS + 2_000;
      // A checkpoint copies the pages into the file as it goes: wait for all of them.
      while (statSync(file).size <= written + 500 * 2_000 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      expect(statSync(file).size).toBeGreaterThan(written + 500 * 2_000);
      expect(await store.kv.get("k499")).toBe("x".repeat(2_000));
    } finally {
      await store.close();
    }
  });

  it("stops at once when its checkpoint worker has already stopped on its own", async () => {
    let stoppedUnasked!: () => void;
    const failed = new Promise<void>((r) => {
      stoppedUnasked = r;
    });
    // A file in a folder that does not exist: the worker's connection fails and the worker ends.
    const unopenable = join(scratchFile(), "..", "missing", "store.sqlite");
    const checkpoints = new Checkpoints(unopenable, 1_000, () => stoppedUnasked());
    await failed;
    const outcome = await Promise.race([
      checkpoints.stop().then(() => "stopped"),
      new Promise((r) => setTimeout(() => r("still waiting"), 1_000)),
    ]);
    expect(outcome).toBe("stopped");
  });

  it("lets the event loop turn inside a long chain of store calls, and only there", async () => {
    const store = await openStore(`sqlite://${scratchFile()}`);
    try {
      let chained = 0;
      let seenAt: number | undefined;
      setImmediate(() => {
        seenAt = chained;
      });
      // Each call alone is far below the slice; together they are far above it.
      const calls = 50_000;
      for (; chained < calls && seenAt === undefined; chained++) await store.kv.set(`k${chained}`, chained);
      expect(seenAt).toBeDefined();
      // …and not after every few: the lookups of many turns started at once run straight on.
      expect(seenAt).toBeGreaterThan(100);
    } finally {
      await store.close();
    }
  });

  it("says which statement SQLite refused, as a rejected call", async () => {
    const store = await openStore(`sqlite://${scratchFile()}`);
    try {
      await expect(store.sql?.query("SELECT nope FROM nowhere", [])).rejects.toThrow(
        /no such table: nowhere/,
      );
      expect(await store.ping()).toBe(true);
    } finally {
      await store.close();
    }
  });
});
