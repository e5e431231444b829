import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { machine } from "./machine.js";

/** Every benchmark module exports `run()`; missing ones are skipped and said so. */
const BENCHES: Array<{ file: string; title: string; targets: string }> = [
  {
    file: "mcp.bench.ts",
    title: "MCP hub",
    targets: "callTool overhead <= 1 ms added; 3 stdio servers ready <= 2 s",
  },
  {
    file: "agent.bench.ts",
    title: "Agent overhead",
    targets: "time per turn not spent in the model or tools",
  },
  {
    file: "memory.bench.ts",
    title: "Memory",
    targets: "turn 200 prompt <= 1.2 x turn 20 with compression; bytes per save flat",
  },
  {
    file: "slack.bench.ts",
    title: "Slack",
    targets: "ack and first text latency; writes per answer; 429s; 20 threads",
  },
  {
    file: "discord.bench.ts",
    title: "Discord",
    targets: "first message latency; writes per answer; 429s; 20 threads",
  },
];

const dir = import.meta.dirname;
const only = process.argv.slice(2);
const sections: string[] = [];
for (const b of BENCHES) {
  if (only.length && !only.some((o) => b.file.startsWith(o))) continue;
  const path = join(dir, b.file);
  if (!existsSync(path)) {
    sections.push(`## ${b.title}\n\nNot run: ${b.file} does not exist yet.\n`);
    continue;
  }
  process.stderr.write(`running ${b.file}…\n`);
  const mod = (await import(path)) as { run: () => Promise<Record<string, unknown> | string> };
  const result = await mod.run();
  console.log(b.file, typeof result === "string" ? result : JSON.stringify(result));
  if (typeof result === "string") {
    // A bench that writes its own Markdown table; its first line is its heading.
    sections.push(`${result.replace(/^## .*\n/, `## ${b.title}\n\nTarget: ${b.targets}.\n`)}\n`);
    continue;
  }
  const rows = Object.entries(result).map(
    ([k, v]) => `| ${k} | ${typeof v === "object" ? JSON.stringify(v) : String(v)} |`,
  );
  sections.push(
    `## ${b.title}\n\nTarget: ${b.targets}.\n\n| figure | value |\n| --- | --- |\n${rows.join("\n")}\n`,
  );
}

const m = machine();
const header = `# Benchmark results\n\nLatest \`npm run bench\`, ${new Date().toISOString()}, on ${m.cpu} (${m.cpus} CPUs, ${m.memoryGiB} GiB), Node ${m.node}, ${m.platform}. Every network peer is an emulator or server on 127.0.0.1.\n`;
if (!only.length) writeFileSync(join(dir, "RESULTS.md"), `${header}\n${sections.join("\n")}`);
else console.log(`${header}\n${sections.join("\n")}`);
process.exit(0);
