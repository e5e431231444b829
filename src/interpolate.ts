import { isPair, isScalar, isSeq, parseDocument, visit } from "yaml";

// `env:` is VS Code's spelling of the same thing in its mcp.json (`${env:GITHUB_TOKEN}`).
const VARIABLE = /\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
/** The names of the variables `text` uses, as `interpolate` reads them. */
export function variableNames(text: string): string[] {
  return [...text.matchAll(VARIABLE)].map((m) => m[1] ?? "");
}

/** A value that is one `${…}` and nothing else. */
const ONE_VARIABLE = /^\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}$/;
const PLACEHOLDER = /\$\{[^}]*\}/g;

/**
 * The `${…}` in `text` that are none of ours: VS Code's `${input:…}` (asked of the user),
 * `${command:…}`. Left as they are, they would reach a server as literal text.
 */
export function unsupportedPlaceholders(text: string): string[] {
  return (text.match(PLACEHOLDER) ?? []).filter((p) => !ONE_VARIABLE.test(p));
}

/** Replaces `${VAR}` and `${VAR:-default}` in one string; unset variables become "" and are pushed to `missing`. */
function substitute(text: string, env: NodeJS.ProcessEnv, missing: string[]): string {
  return text.replace(VARIABLE, (_m, name: string, fallback?: string) => {
    const v = env[name];
    if (v !== undefined && v !== "") return v;
    if (fallback !== undefined) return fallback;
    missing.push(name);
    return "";
  });
}

/** Replaces `${VAR}` and `${VAR:-default}` in every string of a parsed document. */
export function interpolate(value: unknown, env: NodeJS.ProcessEnv, missing: string[] = []): unknown {
  if (typeof value === "string") return substitute(value, env, missing);
  if (Array.isArray(value)) return value.map((v) => interpolate(v, env, missing));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env, missing)]));
  }
  return value;
}

/**
 * YAML 1.2's core schema for the scalars that are not text: what `port: 9464` or
 * `enabled: true` would be if written in the file. Anything else stays text, however
 * YAML would read it (a value starting with `#` or holding `: ` is not a comment or a map).
 */
const CORE_SCALARS: Array<[RegExp, (s: string) => unknown]> = [
  [/^(?:~|null|Null|NULL)$/, () => null],
  [/^(?:true|True|TRUE)$/, () => true],
  [/^(?:false|False|FALSE)$/, () => false],
  [/^[-+]?[0-9]+$/, (s) => Number.parseInt(s, 10)],
  [/^0o[0-7]+$/, (s) => Number.parseInt(s.slice(2), 8)],
  [/^0x[0-9a-fA-F]+$/, (s) => Number.parseInt(s.slice(2), 16)],
  [/^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/, (s) => Number.parseFloat(s)],
];

function asYamlScalar(text: string): unknown {
  for (const [pattern, read] of CORE_SCALARS) if (pattern.test(text)) return read(text);
  return text;
}

/** A `${VAR}` that was not set, and the dotted path of the value that used it. */
export interface UnsetVariable {
  name: string;
  path: string;
}

/** The dotted path (`health.host`, `agent.channelPrompts.0.prompt`) of the node below `ancestors`. */
function pathOf(ancestors: readonly unknown[], node: unknown): string {
  const parts: string[] = [];
  const chain = [...ancestors, node];
  for (let i = 0; i < chain.length - 1; i++) {
    const here = chain[i];
    const next = chain[i + 1];
    if (isPair(here) && isScalar(here.key)) parts.push(String(here.key.value));
    else if (isSeq(here)) parts.push(String(here.items.indexOf(next as never)));
  }
  return parts.join(".");
}

/**
 * A YAML file's values with `${VAR}`s replaced, as plain data, and the variables left
 * unset (""). A plain (unquoted) value that is one `${VAR}` and nothing else takes the
 * type its text would have in the file (`port: ${PORT:-9464}` is a number); a quoted one,
 * or one with more text around the variable, stays text, and so does a variable left
 * unset. Keys are not interpolated. Throws the parser's first error for a file that is
 * not valid YAML.
 */
export function interpolateYaml(
  text: string,
  env: NodeJS.ProcessEnv,
): { data: unknown; unset: UnsetVariable[] } {
  const doc = parseDocument(text);
  const [error] = doc.errors;
  if (error) throw error;
  const unset: UnsetVariable[] = [];
  visit(doc, {
    Scalar(key, node, ancestors) {
      if (key === "key" || typeof node.value !== "string") return;
      const source = node.value;
      const missing: string[] = [];
      const value = substitute(source, env, missing);
      const typed = node.type === "PLAIN" && ONE_VARIABLE.test(source) && missing.length === 0;
      node.value = typed ? asYamlScalar(value) : value;
      if (missing.length > 0) {
        const path = pathOf(ancestors, node);
        for (const name of missing) unset.push({ name, path });
      }
    },
  });
  return { data: doc.toJS(), unset };
}

/** Each setting an unset `${VAR}` left empty, by path: "${VAR}, which is not set" (for describeZodError). */
export function unsetSources(unset: readonly UnsetVariable[]): Record<string, string> {
  const names = new Map<string, Set<string>>();
  for (const { name, path } of unset) names.set(path, (names.get(path) ?? new Set()).add(`\${${name}}`));
  return Object.fromEntries(
    [...names].map(([path, vars]) => [
      path,
      `${[...vars].join(" and ")}, ${vars.size > 1 ? "which are" : "which is"} not set`,
    ]),
  );
}
