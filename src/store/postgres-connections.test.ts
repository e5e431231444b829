import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, inject, it, vi } from "vitest";
import { type PgliteServer, startPgliteServer } from "../../test/support/pglite.js";
import { serverUrl, type TestStores, testStores } from "./testing.js";

const repoRoot = join(import.meta.dirname, "../..");
const DROPPED = "PostgreSQL closed a connection of the store";

interface StoreProcess {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

const started: ChildProcessWithoutNullStreams[] = [];

/** test/support/store-process.ts in a process of its own: an uncaught exception ends it, not the test run. */
function storeProcess(url: string): StoreProcess {
  const child = spawn(process.execPath, ["--import", "tsx", "test/support/store-process.ts", url], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: "warn", NODE_ENV: "test" },
  });
  started.push(child);
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

afterAll(() => {
  for (const child of started)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/**
 * The store's process has one idle pooled connection when the server closes it; the process
 * lives on, and its next read opens another connection and is answered.
 */
async function outlivesDroppedConnection(url: string, drop: () => Promise<void>): Promise<void> {
  const store = storeProcess(url);
  await vi.waitFor(() => expect(store.stdout(), store.stderr()).toContain("ready\n"), { timeout: 20_000 });
  await drop();
  // The pool hears of it from the socket: the process then logs it, or dies of it.
  await vi.waitFor(
    () => expect(store.child.exitCode !== null || store.stderr().includes(DROPPED)).toBe(true),
    { timeout: 10_000 },
  );
  expect(store.child.exitCode, store.stderr().slice(0, 500)).toBeNull();
  store.child.stdin.write("read\n");
  await vi.waitFor(() => expect(store.stdout(), store.stderr()).toContain("read: written\n"), {
    timeout: 10_000,
  });
  store.child.stdin.end();
  expect(await store.exited).toBe(0);
}

describe("a PostgreSQL store whose server closes its idle connections", () => {
  let pglite: PgliteServer | undefined;
  afterEach(async () => {
    await pglite?.stop();
    pglite = undefined;
  });

  it("keeps its process running when PGlite's server drops every connection", async () => {
    pglite = await startPgliteServer();
    const server = pglite;
    await outlivesDroppedConnection(server.url, () => server.dropConnections());
  });

  const postgres = inject("testServers")?.postgres;
  describe("on the run's PostgreSQL server", { skip: !postgres || postgres.embedded !== undefined }, () => {
    let admin: TestStores | undefined;
    afterEach(async () => {
      await admin?.dispose();
    });

    it("keeps its process running when the server terminates its backend", async () => {
      const name = `switchboard-test-${randomUUID().slice(0, 8)}`;
      const url = new URL(serverUrl("postgres"));
      url.searchParams.set("application_name", name);
      admin = testStores("postgres");
      const sql = (await admin.open()).sql;
      await outlivesDroppedConnection(url.toString(), async () => {
        const ended = await sql?.query(
          "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1",
          [name],
        );
        expect(ended).toEqual([{ ended: true }]);
      });
    });
  });
});
