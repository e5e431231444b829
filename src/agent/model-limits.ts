import type { Config } from "../config.js";
import { log } from "../log.js";

export interface ModelLimits {
  contextWindow: number;
  maxOutputTokens: number;
  /**
   * The o200k tokens a prompt may take (tool specs included), where the provider's own
   * count makes it less than `contextWindow - maxOutputTokens` (see answer-room.ts).
   */
  inputBudget?: number;
}

/** The o200k tokens a prompt may take: what leaves the window room for the answer. */
export function inputBudgetOf(limits: ModelLimits): number {
  return limits.inputBudget ?? limits.contextWindow - limits.maxOutputTokens;
}

/**
 * Published limits of common models, matched by id prefix (longest prefix wins, so
 * `gpt-4o-mini` and dated snapshots such as `gpt-4o-2024-08-06` resolve). Figures are
 * from the OpenAI and Anthropic model pages; `maxOutputTokens` is the model's own cap,
 * which is also what the budget reserves for the answer (the LLM emulator holds requests
 * to the same caps, in test/emulators/llm/output-caps.ts).
 */
const KNOWN: ReadonlyArray<readonly [prefix: string, limits: ModelLimits]> = [
  ["gpt-5-chat", { contextWindow: 128_000, maxOutputTokens: 16_384 }],
  ["gpt-5", { contextWindow: 400_000, maxOutputTokens: 128_000 }],
  ["gpt-4.1", { contextWindow: 1_047_576, maxOutputTokens: 32_768 }],
  ["gpt-4o", { contextWindow: 128_000, maxOutputTokens: 16_384 }],
  ["chatgpt-4o", { contextWindow: 128_000, maxOutputTokens: 16_384 }],
  ["gpt-4-turbo", { contextWindow: 128_000, maxOutputTokens: 4_096 }],
  ["gpt-4", { contextWindow: 8_192, maxOutputTokens: 4_096 }],
  ["gpt-3.5-turbo", { contextWindow: 16_385, maxOutputTokens: 4_096 }],
  ["gpt-oss", { contextWindow: 131_072, maxOutputTokens: 32_768 }],
  ["o1", { contextWindow: 200_000, maxOutputTokens: 100_000 }],
  ["o3", { contextWindow: 200_000, maxOutputTokens: 100_000 }],
  ["o4", { contextWindow: 200_000, maxOutputTokens: 100_000 }],
  ["claude-opus-4", { contextWindow: 200_000, maxOutputTokens: 32_000 }],
  ["claude-sonnet-4", { contextWindow: 200_000, maxOutputTokens: 64_000 }],
  ["claude-haiku-4", { contextWindow: 200_000, maxOutputTokens: 64_000 }],
  ["claude-3-7-sonnet", { contextWindow: 200_000, maxOutputTokens: 64_000 }],
  ["claude-3-5-sonnet", { contextWindow: 200_000, maxOutputTokens: 8_192 }],
  ["claude-3-5-haiku", { contextWindow: 200_000, maxOutputTokens: 8_192 }],
  ["claude-3", { contextWindow: 200_000, maxOutputTokens: 4_096 }],
  ["claude-", { contextWindow: 200_000, maxOutputTokens: 8_192 }],
];

/** For models we know nothing about: small enough for most local and hosted models. */
export const UNKNOWN_MODEL_LIMITS: ModelLimits = { contextWindow: 32_000, maxOutputTokens: 4_096 };

const warned = new Set<string>();

function warnOnce(key: string, warn: () => void): void {
  if (warned.has(key)) return;
  warned.add(key);
  warn();
}

/** `model` as its family names it: gateways such as OpenRouter spell ids `openai/gpt-4o` or `anthropic/claude-…`. */
export function bareModelId(model: string): string {
  return model.toLowerCase().slice(model.lastIndexOf("/") + 1);
}

/** The table's guess for Claude models it does not name: not their cap, which may be larger. */
const CLAUDE_GUESS = "claude-";

function knownEntry(model: string): readonly [string, ModelLimits] | undefined {
  const id = bareModelId(model);
  let best: readonly [string, ModelLimits] | undefined;
  for (const entry of KNOWN) {
    if (id.startsWith(entry[0]) && (!best || entry[0].length > best[0].length)) best = entry;
  }
  return best;
}

/**
 * A `maxOutputTokens` above the model's own cap, which both APIs refuse with a 400 on
 * every request ("max_tokens is too large", "… maximum allowed number of output tokens"),
 * is lowered to the cap: the bot keeps answering, and the log says which setting to fix.
 */
function withinOwnCap(model: string, configured: number, entry: readonly [string, ModelLimits] | undefined) {
  if (!entry || entry[0] === CLAUDE_GUESS || configured <= entry[1].maxOutputTokens) return configured;
  const cap = entry[1].maxOutputTokens;
  warnOnce(`${model}\u0000cap`, () =>
    log.warn(
      { model, maxOutputTokens: configured, cap },
      `modelSettings.${model}.maxOutputTokens is above the ${cap} output tokens the model may write, which its API refuses; asking for ${cap}`,
    ),
  );
  return cap;
}

/**
 * Context window and output cap for `model`: `modelSettings` in the config first, then
 * the table above, then a safe default (with one warning per model, so operators learn
 * to set it without the log filling up).
 */
export function modelLimits(config: Config, model: string): ModelLimits {
  const override = config.modelSettings[model];
  const entry = knownEntry(model);
  const base = entry?.[1];
  if (!base && !override?.contextWindow) {
    warnOnce(model, () =>
      log.warn(
        { model, ...UNKNOWN_MODEL_LIMITS },
        "unknown model: assuming a small context window; set modelSettings.<model>.contextWindow in the config",
      ),
    );
  }
  const fallback = base ?? UNKNOWN_MODEL_LIMITS;
  const contextWindow = override?.contextWindow ?? fallback.contextWindow;
  let maxOutputTokens =
    override?.maxOutputTokens !== undefined
      ? withinOwnCap(model, override.maxOutputTokens, entry)
      : fallback.maxOutputTokens;
  if (!override?.maxOutputTokens && override?.contextWindow) {
    // A window set smaller than the model's own (to save cost) must still leave room
    // for input: reserve at most a quarter of it for the answer.
    maxOutputTokens = Math.min(maxOutputTokens, Math.floor(contextWindow / 4));
  }
  if (maxOutputTokens >= contextWindow) {
    warnOnce(`${model}\u0000output`, () =>
      log.warn(
        { model, contextWindow, maxOutputTokens },
        "modelSettings: maxOutputTokens is not below contextWindow; reserving half the window for the answer",
      ),
    );
    maxOutputTokens = Math.floor(contextWindow / 2);
  }
  return { contextWindow, maxOutputTokens };
}

const VISION_MODELS = /^(gpt-4o|gpt-4\.1|gpt-5|o3|o4|claude-|chatgpt-4o|llava|qwen.*vl|gemma3)/i;

/** Whether the model takes images as input: `modelSettings.<model>.vision`, else known model families. */
export function modelSupportsVision(config: Config, model: string): boolean {
  return config.modelSettings[model]?.vision ?? VISION_MODELS.test(model);
}
