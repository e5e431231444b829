import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { openPreparedSqlite, type PreparedSqlite } from "./sqlite-statements.js";

let dir: string;
let db: PreparedSqlite;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "sb-stmt-"));
  db = await openPreparedSqlite(join(dir, "s.sqlite"), 1_000);
  await db.query("CREATE TABLE t(key TEXT PRIMARY KEY, value TEXT)", []);
});

afterEach(async () => {
  await db.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

it("runs one prepared statement for many calls at once, each with its own values and rows", async () => {
  const insert = "INSERT INTO t(key, value) VALUES (?, ?) RETURNING key";
  const keys = Array.from({ length: 50 }, (_, i) => `k${i}`);
  const inserted = await Promise.all(keys.map((k) => db.query(insert, [k, `v-${k}`])));
  expect(inserted.map((rows) => rows[0]?.key)).toEqual(keys);
  const read = await Promise.all(keys.map((k) => db.query("SELECT value FROM t WHERE key = ?", [k])));
  expect(read.map((rows) => rows[0]?.value)).toEqual(keys.map((k) => `v-${k}`));
});

it("rejects a statement that cannot be prepared, and goes on answering the others", async () => {
  await expect(db.query("SELEKT nothing", [])).rejects.toThrow(/syntax error/);
  await expect(db.query("INSERT INTO t(key, value) VALUES (?, ?)", ["a", "1"])).resolves.toEqual([]);
  // A constraint broken by one run does not spoil the statement for the next.
  await expect(db.query("INSERT INTO t(key, value) VALUES (?, ?)", ["a", "2"])).rejects.toThrow(/UNIQUE/);
  await expect(db.query("INSERT INTO t(key, value) VALUES (?, ?)", ["b", "2"])).resolves.toEqual([]);
  expect(await db.query("SELECT key FROM t ORDER BY key", [])).toEqual([{ key: "a" }, { key: "b" }]);
});

it("rejects queries once closed instead of throwing", async () => {
  await db.query("SELECT 1 AS ok", []);
  await db.close();
  await expect(db.query("SELECT 1 AS ok", [])).rejects.toThrow(/closed/);
});
