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
  },
});
