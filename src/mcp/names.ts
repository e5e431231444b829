import { createHash } from "node:crypto";

/** OpenAI's function-name rule; Anthropic's is the same set of characters and length. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
export const MAX_TOOL_NAME = 64;
const SEPARATOR = "__";

export interface ToolRef {
  server: string;
  tool: string;
}

export function sanitizeNamePart(part: string): string {
  const clean = part.replace(/[^a-zA-Z0-9_-]/g, "_");
  return clean === "" ? "_" : clean;
}

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 6);
}

/** `server__tool`, sanitised; over 64 characters it keeps a stable hash of the exact pair. */
export function baseToolName(ref: ToolRef): string {
  const joined = `${sanitizeNamePart(ref.server)}${SEPARATOR}${sanitizeNamePart(ref.tool)}`;
  if (joined.length <= MAX_TOOL_NAME) return joined;
  const hash = shortHash(`${ref.server}\u0000${ref.tool}`);
  return `${joined.slice(0, MAX_TOOL_NAME - hash.length - 1)}_${hash}`;
}

function withSuffix(base: string, n: number): string {
  const suffix = `_${n}`;
  return `${base.slice(0, MAX_TOOL_NAME - suffix.length)}${suffix}`;
}

const keyOf = (ref: ToolRef) => `${ref.server}\u0000${ref.tool}`;
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Provider-safe names for a catalog, and the exact way back. The same set of tools
 * always gets the same names: pairs are ordered (names that need no rewriting first,
 * then by server and tool), the first claimant of a name keeps it and later ones take
 * `_2`, `_3`… skipping any name another tool owns.
 */
export class ToolNameMap {
  private readonly byName = new Map<string, ToolRef>();
  private readonly byKey = new Map<string, string>();

  constructor(refs: readonly ToolRef[]) {
    const unique = new Map(refs.map((r) => [keyOf(r), { server: r.server, tool: r.tool }]));
    const items = [...unique.values()].map((ref) => {
      const base = baseToolName(ref);
      return { ref, base, rewritten: base !== `${ref.server}${SEPARATOR}${ref.tool}` };
    });
    items.sort(
      (a, b) =>
        Number(a.rewritten) - Number(b.rewritten) ||
        compare(a.ref.server, b.ref.server) ||
        compare(a.ref.tool, b.ref.tool),
    );
    const losers: typeof items = [];
    for (const item of items) {
      if (this.byName.has(item.base)) losers.push(item);
      else this.claim(item.base, item.ref);
    }
    for (const item of losers) {
      let n = 2;
      while (this.byName.has(withSuffix(item.base, n))) n++;
      this.claim(withSuffix(item.base, n), item.ref);
    }
  }

  private claim(name: string, ref: ToolRef): void {
    this.byName.set(name, ref);
    this.byKey.set(keyOf(ref), name);
  }

  nameOf(server: string, tool: string): string | undefined {
    return this.byKey.get(keyOf({ server, tool }));
  }

  resolve(name: string): ToolRef | undefined {
    const ref = this.byName.get(name);
    return ref && { ...ref };
  }

  names(): string[] {
    return [...this.byName.keys()];
  }
}
