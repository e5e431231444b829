import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { Ajv2019 } from "ajv/dist/2019.js";
import { Ajv2020 } from "ajv/dist/2020.js";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);

/** Deeper than this a schema is cut to `{}`: no real tool needs it, and it bounds the work. */
const MAX_DEPTH = 40;
/** Inlining copies shared definitions; this caps the copies a hostile or huge schema could cause. */
const MAX_NODES = 20_000;

interface Walk {
  root: Json;
  nodes: number;
}

/** Keywords whose values are sub-schemas, so that `properties` names are never taken for keywords. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "dependentSchemas"]);
const DROPPED = new Set(["$schema", "$defs", "definitions", "$id", "$anchor", "$comment"]);
/** Keywords whose values are data, not schemas: copied as they are. */
const LITERALS = new Set(["enum", "const", "default", "examples"]);

function pointer(root: Json, ref: string): unknown {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(node)) node = node[Number(key)];
    else if (isObject(node)) node = node[key];
    else return undefined;
  }
  return node;
}

/** What stands in for a reference that cannot be inlined (a cycle, or not local). */
function placeholder(target: unknown): Json {
  return isObject(target) && target.type === "object" ? { type: "object" } : {};
}

function inline(node: unknown, walk: Walk, seen: readonly string[], depth: number): unknown {
  if (Array.isArray(node)) return node.map((n) => inline(n, walk, seen, depth + 1));
  if (!isObject(node)) return node;
  if (depth > MAX_DEPTH || ++walk.nodes > MAX_NODES) return {};
  let base: Json = node;
  let stack = seen;
  if (typeof node.$ref === "string") {
    const { $ref: ref, ...siblings } = node;
    const target = pointer(walk.root, ref);
    if (!isObject(target) || seen.includes(ref)) {
      return { ...placeholder(target), ...stripped(siblings, walk, seen, depth) };
    }
    stack = [...seen, ref];
    // Keywords written next to a $ref (a description, a default) refine the target.
    base = { ...target, ...siblings };
    if (typeof base.$ref === "string") return inline(base, walk, stack, depth + 1);
  }
  return stripped(base, walk, stack, depth);
}

function stripped(node: Json, walk: Walk, seen: readonly string[], depth: number): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (DROPPED.has(key)) continue;
    if (LITERALS.has(key)) {
      out[key] = value;
    } else if (SCHEMA_MAPS.has(key) && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, inline(v, walk, seen, depth + 1)]),
      );
    } else if (isObject(value) || Array.isArray(value)) {
      out[key] = inline(value, walk, seen, depth + 1);
    } else {
      out[key] = value;
    }
  }
  return withItems(out);
}

/**
 * An array schema with `items`: OpenAI refuses a tool whose schema has an array without
 * them anywhere ("array schema missing items"), and MCP servers ship such schemas (a bare
 * `{"type": "array"}`, or a 2020-12 tuple of `prefixItems` alone). Any item, or any of
 * the tuple's, is what those schemas allow.
 */
function withItems(node: Json): Json {
  const { type } = node;
  const array = type === "array" || (Array.isArray(type) && type.includes("array"));
  if (!array || "items" in node) return node;
  const tuple = Array.isArray(node.prefixItems) ? node.prefixItems.filter(isObject) : [];
  return { ...node, items: tuple.length > 0 ? { anyOf: tuple } : {} };
}

/** `anyOf`/`oneOf`/`allOf` at the top level: OpenAI refuses them, so their properties are merged. */
function flattenTop(schema: Json): Json {
  const { anyOf, oneOf, allOf, not: _not, enum: _enum, ...rest } = schema;
  const properties: Json = isObject(rest.properties) ? { ...rest.properties } : {};
  const required = new Set(
    Array.isArray(rest.required) ? rest.required.filter((r) => typeof r === "string") : [],
  );
  const branches = (v: unknown) => (Array.isArray(v) ? v.filter(isObject) : []);
  for (const branch of [...branches(anyOf), ...branches(oneOf), ...branches(allOf)]) {
    if (isObject(branch.properties)) {
      for (const [k, v] of Object.entries(branch.properties)) if (!(k in properties)) properties[k] = v;
    }
  }
  // Only allOf's requirements hold for every valid call; a branch's do not.
  for (const branch of branches(allOf)) {
    if (Array.isArray(branch.required))
      for (const r of branch.required) if (typeof r === "string") required.add(r);
  }
  const out: Json = { ...rest, type: "object", properties };
  if (required.size > 0) out.required = [...required];
  else delete out.required;
  return out;
}

/**
 * The tool's input schema in a shape OpenAI and Anthropic both accept: local `$ref`s
 * inlined (a reference back into itself becomes a generic `{}` / `{ type: "object" }`),
 * no `$schema` or definitions, and an object at the top with `properties`.
 */
export function toProviderSchema(schema: unknown): Json {
  if (!isObject(schema)) return { type: "object", properties: {} };
  // "#" starts on the stack: a property that refers to the whole schema is a cycle at once.
  const inlined = inline(schema, { root: schema, nodes: 0 }, ["#"], 0);
  return flattenTop(isObject(inlined) ? inlined : {});
}

// Servers validate again; this pass exists to give the model an error it can act on, so it is lenient.
const AJV_OPTIONS = { strict: false, allErrors: true, validateFormats: false } as const;
const ajv = {
  draft7: new Ajv(AJV_OPTIONS),
  v2019: new Ajv2019(AJV_OPTIONS),
  v2020: new Ajv2020(AJV_OPTIONS),
};

function compile(schema: Json): ValidateFunction | undefined {
  const { $schema, ...rest } = schema;
  const dialect = typeof $schema === "string" ? $schema : "";
  const engine = dialect.includes("2020-12")
    ? ajv.v2020
    : dialect.includes("2019-09")
      ? ajv.v2019
      : ajv.draft7;
  try {
    return engine.compile(rest);
  } catch {
    return undefined;
  } finally {
    // Ajv keeps every schema it compiled, and registers its `$id`: a tool's schema comes
    // anew with each reconnect or catalog change, so kept it would grow for the life of
    // the process, and the next schema with the same `$id` would not compile at all.
    engine.removeSchema(rest);
  }
}

function argPath(instancePath: string, extra?: string): string {
  const parts = instancePath
    .split("/")
    .slice(1)
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  if (extra !== undefined) parts.push(extra);
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), "");
}

const kindOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

function describe(error: ErrorObject, args: unknown): string {
  const where = argPath(error.instancePath);
  const value = error.instancePath === "" ? args : pointer({ v: args } as Json, `#/v${error.instancePath}`);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "required":
      return `missing required argument "${argPath(error.instancePath, String(params.missingProperty))}"`;
    case "additionalProperties":
      return `unknown argument "${argPath(error.instancePath, String(params.additionalProperty))}"`;
    case "type":
      return `"${where || "arguments"}" must be ${String(params.type)}, got ${kindOf(value)}`;
    case "enum":
      return `"${where}" must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`;
    case "const":
      return `"${where}" must be ${JSON.stringify(params.allowedValue)}`;
    default:
      return `"${where || "arguments"}" ${error.message ?? "is invalid"}`;
  }
}

/** Compiled validators, one per schema object; a catalog refresh brings new objects and drops old ones. */
const cache = new WeakMap<Json, ValidateFunction | null>();

/**
 * Checks arguments against the tool's own schema (not the provider copy, which may have
 * lost detail). Returns undefined when they pass, else a sentence that tells the model
 * which argument is wrong and what is expected. A schema Ajv cannot compile passes all.
 */
export function checkArguments(
  toolName: string,
  schema: Json,
  args: Record<string, unknown>,
): string | undefined {
  let validate = cache.get(schema);
  if (validate === undefined) {
    validate = compile(schema) ?? null;
    cache.set(schema, validate);
  }
  if (validate === null || validate(args)) return undefined;
  const problems = [...new Set((validate.errors ?? []).map((e) => describe(e, args)))].slice(0, 10);
  const expected = JSON.stringify(toProviderSchema(schema).properties ?? {});
  return (
    `Invalid arguments for ${toolName}: ${problems.join("; ")}. ` +
    `Expected arguments (JSON Schema properties): ${expected.length > 1500 ? `${expected.slice(0, 1500)}…` : expected}. ` +
    "Fix the arguments and call the tool again."
  );
}
