/**
 * The app as the container runs it: src/ compiled once with the build's own settings
 * (`tsc -p tsconfig.build.json --noCheck`, as test/support/build.ts does for the end-to-end
 * tests), then `node <build>/main.js start`. A folder of this run under
 * node_modules/.cache/switchboard-bench (where Node finds the project's packages), never
 * dist/: src/ changes while people work, and the folder is removed at the end.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const repoRoot = join(import.meta.dirname, "../..");

export interface AppBuild {
  /** `<build>/main.js`. */
  main: string;
  /** tsc's complaints when it wrote the files anyway (a file being edited), for the notes. */
  warnings?: string;
  remove(): void;
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

function removeStale(parent: string): void {
  for (const name of readdirSync(parent)) {
    const pid = Number(/^build-(\d+)-/.exec(name)?.[1]);
    if (pid && !running(pid)) rmSync(join(parent, name), { recursive: true, force: true });
  }
}

function tsc(outDir: string): Promise<{ code: number; output: string }> {
  const bin = join(repoRoot, "node_modules/typescript/bin/tsc");
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, "-p", "tsconfig.build.json", "--noCheck", "--outDir", outDir, "--pretty", "false"],
      { cwd: repoRoot, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, output: `${stdout}${stderr}`.trim() });
      },
    );
  });
}

export async function buildApp(): Promise<AppBuild> {
  const parent = join(repoRoot, "node_modules/.cache/switchboard-bench");
  mkdirSync(parent, { recursive: true });
  removeStale(parent);
  const outDir = mkdtempSync(join(parent, `build-${process.pid}-`));
  const remove = () => rmSync(outDir, { recursive: true, force: true });
  // node_modules ends Node's search for the package scope: say again that these files are ESM.
  writeFileSync(join(outDir, "package.json"), '{ "type": "module" }\n');
  const result = await tsc(outDir);
  const main = join(outDir, "main.js");
  // Exit code 2: type errors with the files written anyway (see test/support/build.ts).
  if ((result.code !== 0 && result.code !== 2) || !existsSync(main)) {
    remove();
    throw new Error(`tsc -p tsconfig.build.json failed (exit ${result.code}):\n${result.output}`);
  }
  return { main, remove, ...(result.code === 2 ? { warnings: result.output } : {}) };
}
