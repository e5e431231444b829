import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../support/chat-process.js";
import { installProductionDependencies } from "../support/process.js";

// No Docker engine runs here: check what the Dockerfile relies on instead of building it.
describe("the container build", () => {
  const dockerfile = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
  let prodDir: string;

  beforeAll(() => {
    execFileSync("npm", ["run", "--silent", "build"], { cwd: repoRoot, stdio: "pipe" });
  }, 180_000);

  afterAll(() => {
    if (prodDir) rmSync(prodDir, { recursive: true, force: true });
  });

  it("copies only files that exist after npm run build", () => {
    const sources = [...dockerfile.matchAll(/^COPY (?!--from)(.+)$/gm)].flatMap((m) => {
      const parts = (m[1] ?? "").trim().split(/\s+/);
      return parts.slice(0, -1);
    });
    expect(sources.length).toBeGreaterThan(3);
    expect(sources.filter((s) => !existsSync(join(repoRoot, s)))).toEqual([]);
  });

  it("runs the compiled entry, as a non-root user, with a health check", () => {
    expect(dockerfile).toMatch(/^CMD \["node", "dist\/main\.js", "start"\]$/m);
    expect(existsSync(join(repoRoot, "dist/main.js"))).toBe(true);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n.*\/healthz/m);
    expect(dockerfile).toMatch(/^VOLUME \["\/app\/data"\]$/m);
  });

  it("starts `node dist/main.js --help` with production dependencies only", () => {
    prodDir = mkdtempSync(join(tmpdir(), "sb-prod-"));
    for (const f of ["package.json", "package-lock.json", "dist"])
      cpSync(join(repoRoot, f), join(prodDir, f), { recursive: true });
    installProductionDependencies(prodDir);
    expect(existsSync(join(prodDir, "node_modules/vitest"))).toBe(false);
    const help = spawnSync(process.execPath, ["dist/main.js", "--help"], { cwd: prodDir, encoding: "utf8" });
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/start/);
    expect(help.stdout).toMatch(/chat/);
    expect(help.stdout).toMatch(/doctor/);
  }, 600_000);
});
