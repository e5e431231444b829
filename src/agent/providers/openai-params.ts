/**
 * Which Chat Completions parameters a request may carry, by endpoint and model. OpenAI's
 * reasoning models (o1, o3, o4-mini, the gpt-5 family) refuse `max_tokens` ("Unsupported
 * parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'
 * instead.", 400 unsupported_parameter) and any temperature but the default. Ollama,
 * llama.cpp, LM Studio and older vLLM know only `max_tokens`.
 */

/** o1, o3, o4-mini, gpt-5 and their dated and sized variants, also as a gateway spells them (`openai/o3`). */
const REASONING = /^(o[1-9]|gpt-5)/;

export function isOpenAIReasoningModel(model: string): boolean {
  return REASONING.test(model.toLowerCase().slice(model.lastIndexOf("/") + 1));
}

/** OpenAI itself or Azure OpenAI, which take `max_completion_tokens` for every model. */
export function isOfficialOpenAIHost(baseURL: string): boolean {
  let host: string;
  try {
    host = new URL(baseURL).hostname.toLowerCase();
  } catch {
    return false;
  }
  return host === "api.openai.com" || host.endsWith(".openai.azure.com");
}

/**
 * The output limit's name: `max_completion_tokens` where OpenAI answers or the model is one
 * of its reasoning models (behind a proxy or a gateway, which pass it on), `max_tokens` for
 * everything else compatible.
 */
export function outputLimitParam(baseURL: string, model: string): "max_tokens" | "max_completion_tokens" {
  return isOfficialOpenAIHost(baseURL) || isOpenAIReasoningModel(model)
    ? "max_completion_tokens"
    : "max_tokens";
}
