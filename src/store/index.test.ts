import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { SwitchboardError } from "../core/errors.js";
import { openStore, redactUrl, SWEEP_SLICE, sweepExpired } from "./index.js";
import { describeEachStore, needsServer, type TestStores, testStores } from "./testing.js";

const nested = {
  a: [[1, [2, "x", null]], { b: ":base64:abc", c: [] }],
  colon: ":starts with a colon",
  text: "ünïcödé ✓",
  n: 0,
  t: true,
};

describeEachStore("openStore on %s", (kind) => {
  let stores: TestStores;
  afterEach(async () => {
    await stores.dispose();
  });

  it("round-trips JSON values exactly, nested arrays and colon-prefixed strings included", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    expect(store.kind).toBe(kind);
    await store.kv.set("value", nested);
    expect(await store.kv.get("value")).toEqual(nested);
  });

  it("answers ping while the store is reachable", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    expect(await store.ping()).toBe(true);
  });

  it("reports not ready once the store is closed", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    await store.close();
    expect(await store.ping()).toBe(false);
  });

  it("keeps values written before the store was closed and opened again", async () => {
    stores = testStores(kind);
    const first = await stores.open();
    await first.kv.set("kept", nested);
    await first.close();
    const second = await stores.open();
    expect(await second.kv.get("kept")).toEqual(nested);
  });

  it("forgets a value after its ttl", async () => {
    stores = testStores(kind);
    const store = await stores.open();
    await store.kv.set("short", 1, 30);
    await store.kv.set("long", 2);
    await new Promise((r) => setTimeout(r, 80));
    expect(await store.kv.get("short")).toBeUndefined();
    expect(await store.kv.get("long")).toBe(2);
  });
});

describe("openStore on sqlite files", () => {
  const dir = mkdtempSync(join(tmpdir(), "switchboard-open-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("opens data/switchboard.sqlite under the working directory by default", async () => {
    const cwd = process.cwd();
    const work = join(dir, "work");
    mkdirSync(work);
    process.chdir(work);
    try {
      const store = await openStore();
      await store.close();
    } finally {
      process.chdir(cwd);
    }
    expect(existsSync(join(work, "data", "switchboard.sqlite"))).toBe(true);
  });

  it("creates the folder of the database file", async () => {
    const file = join(dir, "a", "b", "store.sqlite");
    const store = await openStore(`sqlite://${file}`, { namespace: "t" });
    await store.kv.set("x", 1);
    await store.close();
    expect(existsSync(file)).toBe(true);
  });

  it("deletes expired rows when swept, and only those", async () => {
    const store = await openStore(`sqlite://${join(dir, "sweep.sqlite")}`, { namespace: "t" });
    await store.kv.set("gone", 1, 1);
    await store.kv.set("stays", 2, 60_000);
    await store.kv.set("forever", 3);
    await new Promise((r) => setTimeout(r, 20));
    expect(await sweepExpired(store)).toBe(1);
    const rows = await store.sql?.query("SELECT key FROM switchboard ORDER BY key", []);
    expect(rows?.map((r) => r.key)).toEqual(["t:forever", "t:stays"]);
    await store.close();
  });

  it("sweeps a large table a slice at a time, the event loop running between slices", async () => {
    const store = await openStore(`sqlite://${join(dir, "sweep-large.sqlite")}`, { namespace: "t" });
    const rows = SWEEP_SLICE * 2 + 100;
    for (let i = 0; i < rows; i++) await store.kv.set(`k${i}`, i, i % 2 === 0 ? 1 : 60_000);
    await new Promise((r) => setTimeout(r, 20));
    let sweeping = true;
    let ranMeanwhile = false;
    setImmediate(() => {
      ranMeanwhile = sweeping;
    });
    expect(await sweepExpired(store)).toBe(rows / 2);
    sweeping = false;
    expect(ranMeanwhile).toBe(true);
    const left = await store.sql?.query("SELECT count(*) AS n FROM switchboard", []);
    expect(left?.[0]?.n).toBe(rows / 2);
    await store.close();
  });

  it("opens a new file from several processes' worth of connections at once (replicas starting together)", async () => {
    // Each connection makes the table and switches the new file to WAL; SQLite can refuse one
    // without waiting (it failed 3 runs of 3 before the retry), which must not fail the start.
    for (let round = 0; round < 30; round++) {
      const file = join(dir, `together-${round}.sqlite`);
      const stores = await Promise.all(
        Array.from({ length: 8 }, () => openStore(`sqlite://${file}`, { namespace: "t" })),
      );
      await Promise.all(stores.map((s, i) => s.kv.set(`k${i}`, i)));
      expect(await stores[0]!.kv.get("k3")).toBe(3);
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it("says the store is unavailable when the folder cannot be created", async () => {
    const err = await openStore("sqlite:///etc/hostname/sub/x.sqlite").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SwitchboardError);
    expect((err as SwitchboardError).code).toBe("store_unavailable");
  });
});

describe("sweepExpired on postgres", needsServer("postgres"), () => {
  const mine = testStores("postgres");
  const neighbour = testStores("postgres");
  afterAll(async () => {
    await mine.dispose();
    await neighbour.dispose();
  });

  it("deletes the expired rows of its own namespace, and only those", async () => {
    const store = await mine.open();
    const other = await neighbour.open();
    await store.kv.set("gone", 1, 1);
    await store.kv.set("stays", 2, 60_000);
    await store.kv.set("forever", 3);
    await other.kv.set("gone", 4, 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(await sweepExpired(store)).toBe(1);
    const rows = await store.sql?.query("SELECT key FROM switchboard WHERE key LIKE $1 ORDER BY key", [
      `${store.namespace}:%`,
    ]);
    expect(rows?.map((r) => r.key)).toEqual([`${store.namespace}:forever`, `${store.namespace}:stays`]);
    expect(await sweepExpired(other)).toBe(1);
  });
});

describe("openStore errors", () => {
  it.each([
    ["redis://:hunter2secret@127.0.0.1:1"],
    ["postgres://postgres:hunter2secret@127.0.0.1:1/test"],
    ["postgresql://postgres:hunter2secret@127.0.0.1:1/test"],
  ])("names %s without its password when the server cannot be reached", async (url) => {
    const err = await openStore(url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SwitchboardError);
    const e = err as SwitchboardError;
    expect(e.code).toBe("store_unavailable");
    expect(e.message).toContain("127.0.0.1:1");
    expect(e.message).not.toContain("hunter2secret");
    expect(e.userMessage).not.toContain("hunter2secret");
  });

  it("rejects a scheme it does not know", async () => {
    await expect(openStore("mongodb://127.0.0.1/x")).rejects.toMatchObject({ code: "config_invalid" });
  });

  it("redacts only the password of a URL", () => {
    expect(redactUrl("redis://user:pw@host:6379/0")).toBe("redis://user:***@host:6379/0");
    expect(redactUrl("sqlite://data/switchboard.sqlite")).toBe("sqlite://data/switchboard.sqlite");
  });

  it("says a STORE_URL it cannot parse is not a URL without showing its password", async () => {
    const refused = openStore("redis://default:s3cr/etPW@redis:6379");
    await expect(refused).rejects.toMatchObject({ code: "config_invalid" });
    const message = await refused.catch((e: Error) => e.message);
    expect(message).toMatch(/^STORE_URL is not a URL: redis:\/\/default:\*\*\*@redis:6379\./);
    expect(message).toContain("percent-encoded");
    expect(message).not.toContain("etPW");
  });

  it("refuses a STORE_URL the parser would misread, before dialling the port its password begins with", async () => {
    // As written, the user is 127.0.0.1 and the password 1#s3cretPW; the parser reads host 127.0.0.1, port 1.
    for (const url of [
      "redis://127.0.0.1:1#s3cretPW@redis:6379/0",
      "postgres://127.0.0.1:1?s3cretPW@db:5432/app",
    ]) {
      const message = await openStore(url).then(
        () => "opened",
        (e: Error & { code?: string }) => `${e.code}: ${e.message}`,
      );
      expect(message).toMatch(
        /^config_invalid: STORE_URL is not a URL: (redis|postgres):\/\/127\.0\.0\.1:\*\*\*@/,
      );
      expect(message).not.toMatch(/s3cretPW|127\.0\.0\.1:1\b/);
    }
  });
});
