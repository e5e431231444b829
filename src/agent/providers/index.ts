import type { Config, Secrets } from "../../config.js";
import { SwitchboardError } from "../../core/errors.js";
import { registerSecret } from "../../log.js";
import { AnthropicProvider } from "./anthropic.js";
import { OpenAIProvider } from "./openai.js";
import type { Provider, ProviderName } from "./provider.js";
import { withTextToolProtocol } from "./text-tools.js";

export { AnthropicProvider } from "./anthropic.js";
export { OpenAIProvider } from "./openai.js";
export { withTextToolProtocol } from "./text-tools.js";

export interface CreateProviderOptions {
  provider: ProviderName;
  apiKey?: string;
  baseURL?: string;
  maxRetries: number;
  timeoutMs: number;
}

/** Local OpenAI-compatible servers ignore the key, but the SDK refuses to start without one. */
const KEYLESS_PLACEHOLDER = "not-needed";

export function createProvider(opts: CreateProviderOptions): Provider {
  const { provider, baseURL, maxRetries, timeoutMs } = opts;
  let apiKey = opts.apiKey;
  if (!apiKey) {
    if (provider === "openai" && baseURL) apiKey = KEYLESS_PLACEHOLDER;
    else {
      const variable = provider === "openai" ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
      const hint =
        provider === "openai"
          ? " (or set OPENAI_BASE_URL to a local OpenAI-compatible server that needs none)"
          : "";
      throw new SwitchboardError(
        "config_invalid",
        `The LLM provider is "${provider}" but ${variable} is not set. Set ${variable}${hint}, or choose another provider with LLM_PROVIDER.`,
      );
    }
  }
  registerSecret(apiKey);
  return provider === "openai"
    ? new OpenAIProvider({ apiKey, baseURL, maxRetries, timeoutMs })
    : new AnthropicProvider({ apiKey, baseURL, maxRetries, timeoutMs });
}

/**
 * The provider for one model, as configured (its stream handed on in batches: see
 * `pushed`), with the text tool protocol where `modelSettings` asks for it.
 */
export function providerFor(config: Config, secrets: Secrets, model: string): Provider {
  const name = config.llm.provider;
  const provider = createProvider({
    provider: name,
    apiKey: name === "openai" ? secrets.openaiApiKey : secrets.anthropicApiKey,
    baseURL: name === "openai" ? secrets.openaiBaseUrl : secrets.anthropicBaseUrl,
    maxRetries: config.llm.maxRetries,
    timeoutMs: config.llm.requestTimeoutMs,
  });
  return config.modelSettings[model]?.toolProtocol === "text" ? withTextToolProtocol(provider) : provider;
}
