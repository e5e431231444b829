/**
 * What every benchmark returns to bench/run.ts: its figures (a table of name -> value, or
 * tables with columns), and its target checks. A check that is not `ok` fails the run.
 */

export interface Check {
  name: string;
  value: number;
  target: number;
  unit: string;
  ok: boolean;
  /** How value and target compare: the value must be `<=` or `>=` the target. */
  op: "<=" | ">=";
  /** How the target was set, in words (e.g. "2 x naive + 50 ms"); shown beside it. */
  rule?: string;
}

export interface Table {
  title?: string;
  columns: string[];
  rows: Array<Array<string | number>>;
}

export interface BenchResult {
  /** One paragraph: what was measured, how, against what. */
  about?: string;
  figures?: Record<string, string | number>;
  tables?: Table[];
  checks: Check[];
  /** Figures reported without a target yet, and why. */
  notes?: string[];
}

const round = (x: number, digits: number) => Number(x.toFixed(digits));

/** value <= target. */
export function atMost(name: string, value: number, target: number, unit: string, rule?: string): Check {
  return {
    name,
    value: round(value, 3),
    target: round(target, 3),
    unit,
    op: "<=",
    ok: Number.isFinite(value) && value <= target,
    ...(rule ? { rule } : {}),
  };
}

/** value >= target. */
export function atLeast(name: string, value: number, target: number, unit: string, rule?: string): Check {
  return {
    name,
    value: round(value, 3),
    target: round(target, 3),
    unit,
    op: ">=",
    ok: Number.isFinite(value) && value >= target,
    ...(rule ? { rule } : {}),
  };
}

export const fmt = (x: number, digits = 0): string =>
  Number.isFinite(x) ? x.toFixed(digits).replace(/\.0+$/, "") : String(x);

/** "1.23x", or "n/a" when the baseline is zero or missing. */
export const ratio = (a: number, b: number): string =>
  Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}x` : "n/a";

export function markdownTable(t: Table): string {
  const cell = (v: string | number) => String(v).replace(/\|/g, "\\|");
  const head = `| ${t.columns.map(cell).join(" | ")} |\n| ${t.columns.map(() => "---").join(" | ")} |`;
  const body = t.rows.map((r) => `| ${r.map(cell).join(" | ")} |`).join("\n");
  return `${t.title ? `**${t.title}**\n\n` : ""}${head}\n${body}`;
}

export function checksTable(checks: Check[]): Table {
  return {
    columns: ["target", "value", "must be", "met"],
    rows: checks.map((c) => [
      c.name,
      `${fmt(c.value, 3)} ${c.unit}`,
      `${c.op} ${fmt(c.target, 3)} ${c.unit}${c.rule ? ` (${c.rule})` : ""}`,
      c.ok ? "yes" : "**NO**",
    ]),
  };
}
