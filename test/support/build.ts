import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";

/**
 * Vitest global setup of the end-to-end project: compiles src/ once per run with the build's
 * own settings (`tsc -p tsconfig.build.json`, as `npm run build` and the Dockerfile do), so
 * that the tests start `node <build>/main.js chat|start` as the container does instead of
 * paying npm and tsx at every start.
 *
 * - `--noCheck`: the JavaScript is byte for byte what the checked build writes (each file is
 *   compiled on its own: verbatimModuleSyntax), in half the time; the typecheck step of
 *   `npm test` checks src/, and test/e2e/docker.test.ts runs the real `npm run build`.
 * - A folder of this run, not dist/: src/ changes while people work, so nothing is reused
 *   from an earlier run, and two runs at once (or `npm run build`) never rewrite the files
 *   the other is starting. It is under node_modules/.cache, where Node finds the project's
 *   packages, and is removed at the end of the run.
 */

const repoRoot = join(import.meta.dirname, "../..");

declare module "vitest" {
  export interface ProvidedContext {
    /** The compiled entry point of this run, `<build>/main.js`; see test/support/build.ts. */
    switchboardMain: string;
  }
}

/** True while a process with this id runs (a run stopped by Ctrl-C leaves its folder behind). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const parent = join(repoRoot, "node_modules/.cache/switchboard-test");
  mkdirSync(parent, { recursive: true });
  for (const name of readdirSync(parent)) {
    const pid = Number(/^build-(\d+)-/.exec(name)?.[1]);
    if (pid && !running(pid)) rmSync(join(parent, name), { recursive: true, force: true });
  }
  const outDir = mkdtempSync(join(parent, `build-${process.pid}-`));
  // node_modules ends Node's search for the package scope: say again that these files are ESM.
  writeFileSync(join(outDir, "package.json"), '{ "type": "module" }\n');
  const tsc = join(repoRoot, "node_modules/typescript/bin/tsc");
  const result = await new Promise<{ code: number; output: string }>((resolve) => {
    execFile(
      process.execPath,
      [tsc, "-p", "tsconfig.build.json", "--noCheck", "--outDir", outDir, "--pretty", "false"],
      { cwd: repoRoot, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, output: `${stdout}${stderr}`.trim() });
      },
    );
  });
  const main = join(outDir, "main.js");
  // Exit code 2: errors (a syntax error in a file being edited), files written anyway. Run
  // them, as tsx would have: the tests that reach the broken file fail and say where.
  if ((result.code !== 0 && result.code !== 2) || !existsSync(main)) {
    rmSync(outDir, { recursive: true, force: true });
    throw new Error(`tsc -p tsconfig.build.json failed (exit ${result.code}):\n${result.output}`);
  }
  if (result.code === 2) console.warn(`tsc -p tsconfig.build.json reported errors:\n${result.output}`);
  project.provide("switchboardMain", main);
  return () => rmSync(outDir, { recursive: true, force: true });
}
