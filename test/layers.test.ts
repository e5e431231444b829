import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/** The house reads top to bottom: adapters -> runtime -> agent -> mcp, store -> core. */
const root = join(import.meta.dirname, "..");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith(".ts") && !/\.test(-helper)?\.ts$|\.fake\.ts$|testing\.ts$|testkit\.ts$/.test(path)
      ? [path]
      : [];
  });
}

/** The project files a file imports (types included), as paths relative to the repository. */
function localImports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*)["'](\.[^"']+)["']/g)].map((m) =>
    relative(root, resolve(dirname(file), (m[1] ?? "").replace(/\.js$/, ".ts"))),
  );
}

const graph = new Map(sources(join(root, "src")).map((f) => [relative(root, f), localImports(f)]));

function importsOf(folder: string): Array<[string, string]> {
  return [...graph].flatMap(([file, deps]) =>
    file.startsWith(folder) ? deps.map((d): [string, string] => [file, d]) : [],
  );
}

describe("the layers of the house", () => {
  it("reads the source tree", () => {
    expect(graph.size).toBeGreaterThan(60);
  });

  it("keeps src/core free of every other room", () => {
    expect(importsOf("src/core/").filter(([, d]) => !d.startsWith("src/core/"))).toEqual([]);
  });

  it("keeps src/store away from the agent, the runtime, the adapters and the tools", () => {
    const upward = importsOf("src/store/").filter(([, d]) => /^src\/(agent|runtime|adapters|mcp)\//.test(d));
    expect(upward).toEqual([]);
  });

  it("keeps the runtime and the agent from importing any platform adapter", () => {
    const upward = [
      ...importsOf("src/runtime/"),
      ...importsOf("src/agent/"),
      ...importsOf("src/mcp/"),
    ].filter(([, d]) => d.startsWith("src/adapters/"));
    expect(upward).toEqual([]);
  });

  it("keeps the agent from importing the runtime", () => {
    expect(importsOf("src/agent/").filter(([, d]) => d.startsWith("src/runtime/"))).toEqual([]);
  });

  it("has no import circles", () => {
    const circles: string[][] = [];
    const state = new Map<string, "open" | "done">();
    const walk = (file: string, path: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        circles.push([...path.slice(path.indexOf(file)), file]);
        return;
      }
      state.set(file, "open");
      for (const dep of graph.get(file) ?? []) walk(dep, [...path, file]);
      state.set(file, "done");
    };
    for (const file of graph.keys()) walk(file, []);
    expect(circles).toEqual([]);
  });
});
