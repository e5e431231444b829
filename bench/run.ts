/**
 * `npm run bench [-- name...]`: runs the benchmarks (all, or those whose file name starts
 * with one of the names), prints their figures and target checks, and exits 1 when a
 * target is missed or a benchmark fails. A full run writes bench/RESULTS.md, stamped with
 * the commit, the date and the machine; a filtered run prints the same Markdown instead.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { commitStamp, machine } from "./machine.js";
import { type BenchResult, type Check, checksTable, markdownTable } from "./support/report.js";

process.env.LOG_LEVEL ??= "error";

const BENCHES: Array<{ file: string; title: string }> = [
  { file: "mcp.bench.ts", title: "MCP hub" },
  { file: "agent.bench.ts", title: "Agent overhead" },
  { file: "memory.bench.ts", title: "Memory" },
  { file: "slack.bench.ts", title: "Slack" },
  { file: "discord.bench.ts", title: "Discord" },
  { file: "approvals.bench.ts", title: "Tool approvals" },
  { file: "catalog.bench.ts", title: "Large tool catalogs" },
  { file: "load.bench.ts", title: "Load: many conversations at once" },
  { file: "replicas.bench.ts", title: "Replicas on Redis" },
  { file: "replicas-load.bench.ts", title: "Replicas under load" },
  { file: "tracing.bench.ts", title: "Tracing's cost" },
];

const dir = import.meta.dirname;
const only = process.argv.slice(2);
const started = new Date();
const sections: string[] = [];
const checks: Check[] = [];
const failures: string[] = [];

for (const b of BENCHES) {
  if (only.length && !only.some((o) => b.file.startsWith(o))) continue;
  const path = join(dir, b.file);
  if (!existsSync(path)) {
    failures.push(`${b.file} does not exist`);
    sections.push(`## ${b.title}\n\nNot run: ${b.file} does not exist.\n`);
    continue;
  }
  process.stderr.write(`running ${b.file}…\n`);
  const t0 = performance.now();
  let result: BenchResult;
  try {
    const mod = (await import(path)) as { run: () => Promise<BenchResult> };
    result = await mod.run();
  } catch (err) {
    const why = err instanceof Error ? (err.stack ?? err.message) : String(err);
    failures.push(`${b.file} failed: ${why}`);
    sections.push(`## ${b.title}\n\nThe benchmark failed:\n\n\`\`\`\n${why}\n\`\`\`\n`);
    continue;
  }
  const seconds = ((performance.now() - t0) / 1000).toFixed(0);
  checks.push(...result.checks);
  const parts = [`## ${b.title}`];
  if (result.about) parts.push(result.about);
  if (result.figures) {
    parts.push(
      markdownTable({
        columns: ["figure", "value"],
        rows: Object.entries(result.figures).map(([k, v]) => [k, v]),
      }),
    );
  }
  for (const t of result.tables ?? []) parts.push(markdownTable(t));
  parts.push(markdownTable({ title: "Targets", ...checksTable(result.checks) }));
  for (const n of result.notes ?? []) parts.push(`Note: ${n}`);
  parts.push(`_${b.file} ran ${seconds} s._`);
  const section = `${parts.join("\n\n")}\n`;
  sections.push(section);
  console.log(`${section}`);
}

const m = machine();
const missed = checks.filter((c) => !c.ok);
const header = [
  "# Benchmark results",
  "",
  `\`npm run bench\`${only.length ? ` (${only.join(", ")})` : ""} at commit ${commitStamp(join(dir, ".."))}, ` +
    `${started.toISOString()}, on ${m.cpu} (${m.cpus} cores, ${m.memoryGiB} GiB), Node ${m.node}, ` +
    `${m.os} (${m.platform}). Every network peer is an emulator or server on 127.0.0.1.`,
  "",
  `Targets: ${checks.length - missed.length} of ${checks.length} met` +
    `${missed.length ? `; missed: ${missed.map((c) => c.name).join("; ")}` : ""}` +
    `${failures.length ? `; ${failures.length} benchmark(s) failed to run` : ""}.`,
  "",
].join("\n");
const markdown = `${header}\n${sections.join("\n")}`;
if (!only.length) writeFileSync(join(dir, "RESULTS.md"), markdown);
else console.log(header);

for (const c of checks) {
  process.stderr.write(
    `${c.ok ? "ok    " : "MISSED"} ${c.name}: ${c.value} ${c.unit} (must be ${c.op} ${c.target} ${c.unit})\n`,
  );
}
if (missed.length || failures.length) {
  process.stderr.write(`\n${missed.length} target(s) missed, ${failures.length} benchmark(s) failed:\n`);
  for (const c of missed) {
    process.stderr.write(
      `  MISSED ${c.name}: ${c.value} ${c.unit}, must be ${c.op} ${c.target} ${c.unit}${c.rule ? ` (${c.rule})` : ""}\n`,
    );
  }
  for (const f of failures) process.stderr.write(`  FAILED ${f}\n`);
  process.exit(1);
}
process.stderr.write(`\nall ${checks.length} targets met\n`);
process.exit(0);
