import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith(".ts") ? [path] : [];
  });
}

function imports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*)["']([^"']+)["']/g)].map((m) => m[1] ?? "");
}

describe("the platform boundary", () => {
  const core = [
    ...sources(join(root, "src/agent")),
    ...sources(join(root, "src/mcp")),
    ...sources(join(root, "src/store")),
  ];

  it("finds the core's source files", () => {
    expect(core.length).toBeGreaterThan(10);
  });

  it("keeps @slack/*, discord.js and src/adapters out of src/agent, src/mcp and src/store", () => {
    const offenders = core.flatMap((file) =>
      imports(file)
        .filter(
          (spec) =>
            /^@slack\//.test(spec) ||
            /^discord\.js$|^@discordjs\//.test(spec) ||
            /\/adapters(\/|$)/.test(spec),
        )
        .map((spec) => `${relative(root, file)} imports ${spec}`),
    );
    expect(offenders).toEqual([]);
  });

  it("keeps each platform adapter out of the others", () => {
    const platforms = ["slack", "discord", "console"];
    const offenders = platforms.flatMap((p) =>
      sources(join(root, "src/adapters", p)).flatMap((file) =>
        imports(file)
          .filter((spec) => platforms.some((other) => other !== p && spec.includes(`/${other}/`)))
          .map((spec) => `${relative(root, file)} imports ${spec}`),
      ),
    );
    expect(offenders).toEqual([]);
  });
});
