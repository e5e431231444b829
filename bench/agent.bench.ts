import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Provider } from "../src/agent/providers/provider.js";
import { buildCore } from "../src/app.js";
import type { Reply } from "../src/runtime/contract.js";
import { LlmEmulator } from "../test/emulators/llm/index.js";
import { machine } from "./machine.js";

const TURNS = 200;

/** A reply that discards what it is given, so the platform costs nothing. */
function nullReply(): Reply {
  return {
    status: async () => undefined,
    stream: () => ({ write: () => undefined, finish: async () => undefined, fail: async () => undefined }),
    upload: async () => undefined,
    title: async () => undefined,
    notice: async () => undefined,
  };
}

/** Measures how long a provider's streams take, so the agent's own time can be separated. */
function timed(inner: Provider, clock: { ms: number }): Provider {
  return {
    name: inner.name,
    listModels: (s) => inner.listModels(s),
    async *stream(req, signal) {
      const started = performance.now();
      try {
        for await (const e of inner.stream(req, signal)) yield e;
      } finally {
        clock.ms += performance.now() - started;
      }
    },
  };
}

/** Agent overhead per turn: wall time of a turn minus the time spent waiting for the model. */
export async function run(): Promise<Record<string, number | string>> {
  const llm = await LlmEmulator.start({ responder: () => ({ text: "ok, noted.", chunkSize: 64 }) });
  const dir = mkdtempSync(join(tmpdir(), "sb-bench-agent-"));
  writeFileSync(join(dir, "switchboard.yaml"), "memory:\n  compressAt: 0.95\n");
  const clock = { ms: 0 };
  const core = await buildCore({
    env: {
      OPENAI_API_KEY: "sk-bench",
      OPENAI_BASE_URL: llm.openaiBaseUrl,
      SWITCHBOARD_CONFIG: join(dir, "switchboard.yaml"),
      STORE_URL: `sqlite://${join(dir, "s.sqlite")}`,
      LOG_LEVEL: "warn",
    },
    cwd: dir,
    wrapProvider: (p) => timed(p, clock),
  });
  const started = performance.now();
  for (let i = 0; i < TURNS; i++) {
    await core.dispatcher.handle({
      id: `bench-${i}`,
      key: "bench:agent",
      platform: "console",
      channel: "bench",
      user: { id: "u" },
      text: `message number ${i}: please note it`,
      attachments: [],
      reply: nullReply(),
    });
  }
  const total = performance.now() - started;
  await core.close();
  await llm.close();
  rmSync(dir, { recursive: true, force: true });
  return {
    ...machine(),
    turns: TURNS,
    turnMsMean: +(total / TURNS).toFixed(2),
    modelMsMean: +(clock.ms / TURNS).toFixed(2),
    agentOverheadMsPerTurn: +((total - clock.ms) / TURNS).toFixed(2),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  console.log(JSON.stringify(await run(), null, 2));
}
