import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two cores on CI: child processes (MCP servers, the chat CLI) dominate, not CPU.
    pool: "forks",
  },
});
