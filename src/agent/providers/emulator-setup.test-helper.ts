import { afterAll, afterEach, beforeAll } from "vitest";
import { LlmEmulator } from "../../../test/emulators/llm/index.js";
import { SwitchboardError } from "../../core/errors.js";
import { AnthropicProvider } from "./anthropic.js";
import { OpenAIProvider } from "./openai.js";
import type { ModelRequest, Provider } from "./provider.js";

/**
 * Starts one LLM emulator for the calling test file and empties its queue and records after
 * each test. The returned function gives the running emulator (it exists once `beforeAll` ran).
 */
export function useLlmEmulator(): () => LlmEmulator {
  let emulator: LlmEmulator | undefined;
  beforeAll(async () => {
    emulator = await LlmEmulator.start();
  });
  afterEach(() => emulator?.reset());
  afterAll(async () => {
    await emulator?.close();
  });
  return () => {
    if (!emulator) throw new Error("the LLM emulator is used before beforeAll started it");
    return emulator;
  };
}

/** Drains one stream from `provider` and returns the JSON body of the request it sent. */
export async function sentBody(
  emulator: LlmEmulator,
  provider: Provider,
  req: ModelRequest,
): Promise<Record<string, unknown>> {
  for await (const _ of provider.stream(req, new AbortController().signal)) {
    // drained for the request it makes
  }
  const recorded = emulator.requests.at(-1);
  if (!recorded) throw new Error("no request reached the emulator");
  return recorded.body;
}

/** A real provider of `kind` whose SDK talks to the emulator; no SDK retries unless asked. */
export function emulatedProvider(
  emulator: LlmEmulator,
  kind: "openai" | "anthropic",
  opts: { apiKey: string; maxRetries?: number },
): Provider {
  const common = { apiKey: opts.apiKey, maxRetries: opts.maxRetries ?? 0, timeoutMs: 10_000 };
  return kind === "openai"
    ? new OpenAIProvider({ ...common, baseURL: emulator.openaiBaseUrl })
    : new AnthropicProvider({ ...common, baseURL: emulator.anthropicBaseUrl });
}

/** The error a request's stream ends with as the person would be told it; undefined when it answered. */
export async function streamFailure(
  provider: Provider,
  req: ModelRequest,
): Promise<SwitchboardError | undefined> {
  try {
    for await (const _ of provider.stream(req, new AbortController().signal)) {
      // drained
    }
  } catch (err) {
    if (err instanceof SwitchboardError) return err;
    throw err;
  }
  return undefined;
}
