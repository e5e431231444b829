import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores on CI: child processes (MCP servers, the chat CLI) dominate, not CPU.
    pool: "forks",
    // In-process apps log only errors; tests that need more set LOG_LEVEL on the child they start.
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? "error" },
    // Finds Redis and PostgreSQL (or starts PGlite) once; the reporter names what was skipped.
    globalSetup: ["test/support/services.ts"],
    reporters: ["default", "./test/support/services-reporter.ts"],
    tags: [
      { name: "redis", description: "needs Redis at TEST_REDIS_URL; skipped when none answers" },
      { name: "postgres", description: "needs PostgreSQL at TEST_POSTGRES_URL, or the embedded PGlite" },
    ],
  },
});
