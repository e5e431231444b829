import { describe, expect, it } from "vitest";
import { openAiToolRefusal } from "../../test/emulators/llm/tools.js";
import { checkArguments, toProviderSchema } from "./schema.js";

const item = {
  type: "object",
  properties: { id: { type: "integer" }, child: { $ref: "#/$defs/Item" } },
  required: ["id"],
};

describe("provider schemas", () => {
  it("inlines $defs references and drops $schema and the definitions", () => {
    const out = toProviderSchema({
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: { owner: { $ref: "#/$defs/Person", description: "Who owns it" } },
      $defs: { Person: { type: "object", properties: { name: { type: "string" } } } },
    });
    expect(out).toEqual({
      type: "object",
      properties: {
        owner: { type: "object", properties: { name: { type: "string" } }, description: "Who owns it" },
      },
    });
  });

  it("inlines draft-07 definitions, also through a chain of references", () => {
    const out = toProviderSchema({
      type: "object",
      properties: { when: { $ref: "#/definitions/Alias" } },
      definitions: { Alias: { $ref: "#/definitions/Date" }, Date: { type: "string", format: "date" } },
    });
    expect(out.properties).toEqual({ when: { type: "string", format: "date" } });
  });

  it("cuts a recursive definition after one level with a generic object", () => {
    const out = toProviderSchema({
      type: "object",
      properties: { item: { $ref: "#/$defs/Item" } },
      $defs: { Item: item },
    });
    expect(out.properties).toEqual({
      item: {
        type: "object",
        properties: { id: { type: "integer" }, child: { type: "object" } },
        required: ["id"],
      },
    });
    expect(JSON.stringify(out)).not.toContain("$ref");
  });

  it("turns a reference to the whole schema and a remote reference into open schemas", () => {
    const out = toProviderSchema({
      type: "object",
      properties: { self: { $ref: "#" }, remote: { $ref: "https://example.com/schema.json" } },
    });
    expect(out.properties).toEqual({ self: { type: "object" }, remote: {} });
  });

  it("gives an empty or missing schema an object type with empty properties", () => {
    expect(toProviderSchema({})).toEqual({ type: "object", properties: {} });
    expect(toProviderSchema(undefined)).toEqual({ type: "object", properties: {} });
    expect(toProviderSchema({ type: "object" })).toEqual({ type: "object", properties: {} });
  });

  it("merges top-level anyOf branches into plain properties, which OpenAI requires", () => {
    const out = toProviderSchema({
      anyOf: [
        { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
        { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
      ],
    });
    expect(out).toEqual({ type: "object", properties: { id: { type: "string" }, name: { type: "string" } } });
  });

  it("leaves property names that look like keywords alone", () => {
    const out = toProviderSchema({
      type: "object",
      properties: { $schema: { type: "string" }, definitions: { type: "number" } },
    });
    expect(out.properties).toEqual({ $schema: { type: "string" }, definitions: { type: "number" } });
  });

  it("gives every array items, which OpenAI refuses a tool without, and keeps data as it is", () => {
    const schema = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: {
        command: { type: "array", description: "argv" },
        either: { type: ["string", "array"] },
        pair: { type: "array", prefixItems: [{ type: "string" }, { type: "integer" }] },
        nested: { type: "object", properties: { tags: { $ref: "#/$defs/Tags" } } },
        listed: { type: "array", items: { type: "array" } },
        choice: { anyOf: [{ type: "array" }, { type: "null" }] },
        data: { type: "object", default: { type: "array" }, examples: [{ type: "array" }] },
      },
      $defs: { Tags: { type: "array", description: "tags" } },
    };
    const tool = (parameters: unknown) => [{ type: "function", function: { name: "k8s__exec", parameters } }];
    // What the server sent, as it is, is refused; the provider copy is not.
    expect(openAiToolRefusal(tool(schema))?.code).toBe("invalid_function_parameters");
    const out = toProviderSchema(schema);
    expect(openAiToolRefusal(tool(out))).toBeUndefined();
    const props = out.properties as Record<string, Record<string, unknown>>;
    expect(props.command).toEqual({ type: "array", description: "argv", items: {} });
    expect(props.either).toEqual({ type: ["string", "array"], items: {} });
    expect(props.pair?.items).toEqual({ anyOf: [{ type: "string" }, { type: "integer" }] });
    expect(props.nested).toEqual({
      type: "object",
      properties: { tags: { type: "array", description: "tags", items: {} } },
    });
    expect(props.listed).toEqual({ type: "array", items: { type: "array", items: {} } });
    expect(props.choice).toEqual({ anyOf: [{ type: "array", items: {} }, { type: "null" }] });
    // Defaults and examples are values, not schemas.
    expect(props.data).toEqual(schema.properties.data);
  });

  it("does not change the schema it was given", () => {
    const original = {
      type: "object",
      properties: { item: { $ref: "#/$defs/Item" } },
      $defs: { Item: item },
    };
    const copy = structuredClone(original);
    toProviderSchema(original);
    expect(original).toEqual(copy);
  });
});

describe("argument checks", () => {
  const sum = {
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" } },
    required: ["a", "b"],
    additionalProperties: false,
  };

  it("accepts arguments that match", () => {
    expect(checkArguments("x__sum", sum, { a: 1, b: 2 })).toBeUndefined();
  });

  it("names the missing argument, the wrong type and the unknown argument, and asks for a fix", () => {
    const text = checkArguments("x__sum", sum, { a: "1", c: 3 }) ?? "";
    expect(text).toContain('missing required argument "b"');
    expect(text).toContain('"a" must be number, got string');
    expect(text).toContain('unknown argument "c"');
    expect(text).toContain('"b":{"type":"number"}');
    expect(text).toContain("call the tool again");
  });

  it("checks against the original schema, references included, with a path to nested arguments", () => {
    const schema = { type: "object", properties: { item: { $ref: "#/$defs/Item" } }, $defs: { Item: item } };
    expect(checkArguments("s__alpha", schema, { item: { id: 1, child: { id: 2 } } })).toBeUndefined();
    expect(checkArguments("s__alpha", schema, { item: { id: 1, child: { id: "two" } } })).toContain(
      '"item.child.id" must be integer, got string',
    );
  });

  it("lists the allowed values of an enum", () => {
    const schema = { type: "object", properties: { city: { enum: ["Paris", "Oslo"] } } };
    expect(checkArguments("w__city", schema, { city: "Rome" })).toContain(
      '"city" must be one of "Paris", "Oslo"',
    );
  });

  it("understands 2020-12 schemas", () => {
    const schema = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: { tags: { type: "array", prefixItems: [{ type: "string" }] } },
    };
    expect(checkArguments("t__tags", schema, { tags: [1] })).toContain('"tags[0]" must be string');
  });

  it("checks a schema with an $id again after a catalog refresh brings it anew", () => {
    const version = (required: string[]) => ({
      $id: "https://tools.example/schemas/deploy.json",
      type: "object",
      properties: { service: { type: "string" }, region: { type: "string" } },
      required,
    });
    expect(checkArguments("ops__deploy", version(["service"]), {})).toContain(
      'missing required argument "service"',
    );
    // The server restarted with a new version of the same schema.
    const refreshed = version(["service", "region"]);
    expect(checkArguments("ops__deploy", refreshed, { service: "api" })).toContain(
      'missing required argument "region"',
    );
    expect(checkArguments("ops__deploy", refreshed, { service: "api", region: "eu" })).toBeUndefined();
  });

  it("lets every call through when the schema cannot be compiled, leaving the check to the server", () => {
    expect(
      checkArguments("t__bad", { type: "object", properties: { a: { type: "nonsense" } } }, { a: 1 }),
    ).toBeUndefined();
  });
});
