/**
 * The rules both APIs enforce on tool definitions before any model runs, with the 400
 * each answers. Names: `^[a-zA-Z0-9_-]{1,64}$` on both. OpenAI also refuses a
 * `parameters` schema with an array that has no `items` anywhere in it, naming the path:
 * MCP servers ship such schemas, and Anthropic accepts them, so a bot tested only on
 * Anthropic never learns it. OpenAI takes at most 128 tools in a request; Anthropic
 * documents no such count, so the emulator sets none for it.
 */

type Json = Record<string, unknown>;

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** Chat Completions' `tools` array limit. */
const OPENAI_MAX_TOOLS = 128;

const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);

/** What the API answers a request whose tools break a rule. */
export interface ToolRefusal {
  message: string;
  param: string | null;
  code: string | null;
}

/** Keywords whose value is a map of sub-schemas, and those whose value is one or a list of them. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);
const SCHEMA_KEYS = new Set([
  "items",
  "additionalProperties",
  "anyOf",
  "oneOf",
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "prefixItems",
  "contains",
]);

/** The path, as OpenAI prints it, of the first array schema without `items`, if any. */
function arrayWithoutItems(schema: unknown, path: string[]): string[] | undefined {
  if (!isObject(schema)) return undefined;
  const type = schema.type;
  if (type === "array" && !("items" in schema)) return path;
  if (Array.isArray(type)) {
    const at = type.indexOf("array");
    if (at >= 0 && !("items" in schema)) return [...path, "type", String(at)];
  }
  for (const [key, value] of Object.entries(schema)) {
    if (SCHEMA_MAPS.has(key) && isObject(value)) {
      for (const [name, sub] of Object.entries(value)) {
        const found = arrayWithoutItems(sub, [...path, key, name]);
        if (found) return found;
      }
    } else if (SCHEMA_KEYS.has(key)) {
      const subs = Array.isArray(value) ? value : [value];
      for (const [i, sub] of subs.entries()) {
        const found = arrayWithoutItems(
          sub,
          Array.isArray(value) ? [...path, key, String(i)] : [...path, key],
        );
        if (found) return found;
      }
    }
  }
  return undefined;
}

const context = (path: string[]) => `(${path.map((p) => `'${p}'`).join(", ")})`;

export function openAiToolRefusal(tools: unknown): ToolRefusal | undefined {
  if (!Array.isArray(tools)) return undefined;
  if (tools.length > OPENAI_MAX_TOOLS) {
    return {
      message: `Invalid 'tools': array too long. Expected an array with maximum length ${OPENAI_MAX_TOOLS}, but got an array with length ${tools.length} instead.`,
      param: "tools",
      code: "array_above_max_length",
    };
  }
  for (const [i, tool] of tools.entries()) {
    const fn = isObject(tool) && isObject(tool.function) ? tool.function : undefined;
    if (!fn) continue;
    const name = typeof fn.name === "string" ? fn.name : "";
    if (!NAME.test(name)) {
      const tooLong = name.length > 64;
      return {
        message: tooLong
          ? `Invalid 'tools[${i}].function.name': string too long. Expected a string with maximum length 64, but got a string with length ${name.length} instead.`
          : `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        param: `tools[${i}].function.name`,
        code: tooLong ? "string_above_max_length" : "invalid_value",
      };
    }
    const missing = arrayWithoutItems(fn.parameters, []);
    if (missing) {
      return {
        message: `Invalid schema for function '${fn.name}': In context=${context(missing)}, array schema missing items.`,
        param: `tools[${i}].function.parameters`,
        code: "invalid_function_parameters",
      };
    }
  }
  return undefined;
}

export function anthropicToolRefusal(tools: unknown): ToolRefusal | undefined {
  if (!Array.isArray(tools)) return undefined;
  for (const [i, tool] of tools.entries()) {
    // Anthropic's own tools (web search, code execution) have a type of their own and no schema.
    if (!isObject(tool) || (tool.type !== undefined && tool.type !== "custom")) continue;
    if (typeof tool.name !== "string" || !NAME.test(tool.name)) {
      return {
        message: `tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`,
        param: null,
        code: null,
      };
    }
    if (!isObject(tool.input_schema) || tool.input_schema.type !== "object") {
      return {
        message: `tools.${i}.custom.input_schema.type: Input should be 'object'`,
        param: null,
        code: null,
      };
    }
  }
  return undefined;
}
