import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { repoRoot } from "../support/chat-process.js";
import { installProductionDependencies } from "../support/process.js";

// No Docker engine runs here: this builds what the image's /app holds (the Dockerfile's run
// stage) in a folder, and runs `npm run doctor`'s compiled entry there as the image would.
describe("config/mcp.example.json in the production image", () => {
  let app: string;
  let doctor: { stdout: string; stderr: string };
  const line = (name: string) =>
    doctor.stdout.split("\n").find((l) => new RegExp(`^(ok|FAIL) +${name} `).test(l));

  beforeAll(() => {
    app = mkdtempSync(join(tmpdir(), "sb-image-"));
    for (const f of ["package.json", "package-lock.json"]) cpSync(join(repoRoot, f), join(app, f));
    mkdirSync(join(app, "config"));
    for (const f of ["switchboard.example.yaml", "mcp.example.json"])
      cpSync(join(repoRoot, "config", f), join(app, "config", f));
    // This run's `tsc -p tsconfig.build.json` output (test/support/build.ts), as the image's dist/.
    cpSync(dirname(inject("switchboardMain")), join(app, "dist"), { recursive: true });
    installProductionDependencies(app);
    // As `cp config/mcp.example.json config/mcp.json` and `npm run doctor` in the container.
    doctor = spawnSync(process.execPath, ["dist/main.js", "doctor"], {
      cwd: app,
      encoding: "utf8",
      timeout: 120_000,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_ENV: "production",
        SWITCHBOARD_CONFIG: "config/switchboard.example.yaml",
        MCP_CONFIG: "config/mcp.example.json",
        STORE_URL: `sqlite://${join(app, "doctor.sqlite")}`,
        // Nothing answers here; only the config and MCP lines matter to these tests.
        OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
      },
    });
  }, 300_000);

  afterAll(() => {
    if (app) rmSync(app, { recursive: true, force: true });
  });

  it("reads both example files there and tries each server", () => {
    expect(line("config")?.split(/ {2,}/), doctor.stdout + doctor.stderr).toEqual([
      "ok",
      "config",
      join(app, "config/switchboard.example.yaml"),
    ]);
    expect(line("mcp everything")).toBeDefined();
    expect(line("mcp files")).toBeDefined();
  });

  // The example's servers are production dependencies: an image built with --omit=dev has them.
  it("starts each of its servers with production dependencies only, and lists their tools", () => {
    expect(line("mcp everything")).toMatch(/^ok +mcp everything +\d+ tools$/);
    expect(line("mcp files")).toMatch(/^ok +mcp files +\d+ tools$/);
  });
});
