import { availableParallelism } from "node:os";
import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from "vitest/config";

/**
 * Three projects, all run by `vitest run` (and `npm test`), one after the other:
 *
 * - unit: everything but test/e2e. Mostly waiting (timers, emulated rate limits), little CPU,
 *   so two files per core (vitest's default is one per core, less one). The files share
 *   their worker processes (`isolate: false`): a fresh process per file spent more CPU
 *   importing the SDKs than the tests themselves. Check a file's independence with `--isolate`.
 * - e2e: test/e2e, which start the real bot (`node <build>/main.js`, MCP servers) and measure
 *   how fast it starts and stops: one file per core, each in a fresh process, after the unit
 *   files, so that nothing else competes with them for the CPU.
 *
 * - replicas: the end-to-end files that run three or four bots at once (REPLICA_FILES), one at
 *   a time after everything else.
 *
 * `vitest run --project unit` runs the fast half alone; `--maxWorkers` overrides the counts.
 */
const cores = availableParallelism();

/** End-to-end files that run several bot processes at once (see the "replicas" project). */
const REPLICA_FILES = ["test/e2e/takeover.test.ts", "test/e2e/replicas-slack.test.ts"];

/** What both projects share; each lists its own files. */
const shared: TestProjectInlineConfiguration["test"] = {
  testTimeout: 30_000,
  hookTimeout: 30_000,
  // Child processes (MCP servers, the chat CLI), native addons (sqlite3) and fake timers:
  // processes, not threads.
  pool: "forks",
  // In-process apps log only errors; tests that need more set LOG_LEVEL on the child they start.
  env: { LOG_LEVEL: process.env.LOG_LEVEL ?? "error" },
  tags: [
    { name: "redis", description: "needs Redis at TEST_REDIS_URL; skipped when none answers" },
    { name: "postgres", description: "needs PostgreSQL at TEST_POSTGRES_URL, or the embedded PGlite" },
  ],
};

export default defineConfig({
  test: {
    // Finds Redis and PostgreSQL (or starts PGlite) once per run, for both projects; the
    // reporter names what was skipped.
    globalSetup: ["test/support/services.ts"],
    reporters: ["default", "./test/support/services-reporter.ts"],
    projects: [
      {
        test: {
          ...shared,
          name: "unit",
          include: ["src/**/*.test.ts", "test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "test/e2e/**"],
          maxWorkers: Math.max(3, 2 * cores),
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...shared,
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...REPLICA_FILES],
          maxWorkers: Math.max(2, cores),
          sequence: { groupOrder: 1 },
          // Compiles src/ once per run (tsc -p tsconfig.build.json) for the tests that start
          // `node <build>/main.js`; runs only when an end-to-end file is in the run.
          globalSetup: ["test/support/build.ts"],
        },
      },
      {
        test: {
          ...shared,
          // Three or four bot processes each, with their emulators: alone, after the others,
          // so that neither they nor the other end-to-end files wait for a busy CPU.
          name: "replicas",
          include: REPLICA_FILES,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
          globalSetup: ["test/support/build.ts"],
        },
      },
    ],
  },
});
