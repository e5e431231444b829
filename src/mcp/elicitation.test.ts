import { describe, expect, it } from "vitest";
import { fieldsOf } from "./elicitation.js";

describe("an elicitation's requested schema as form fields", () => {
  it("reads strings with formats, bounded numbers, booleans and every enum form", () => {
    const fields = fieldsOf({
      properties: {
        name: { type: "string", title: "Name", description: "Your full name" },
        email: { type: "string", format: "email" },
        homepage: { type: "string", format: "uri" },
        birthdate: { type: "string", format: "date" },
        age: { type: "integer", minimum: 1, maximum: 100, default: 42 },
        agree: { type: "boolean", default: false },
        friend: { type: "string", enum: ["Monica", "Ross"], default: "Monica" },
        hero: { type: "string", oneOf: [{ const: "hero-1", title: "Superman" }] },
        pet: { type: "string", enum: ["pet-1"], enumNames: ["Cats"] },
        fish: {
          type: "array",
          minItems: 1,
          maxItems: 3,
          items: { anyOf: [{ const: "fish-1", title: "Tuna" }] },
        },
        tools: { type: "array", items: { type: "string", enum: ["Guitar"] }, default: ["Guitar"] },
      },
      required: ["name"],
    });
    if ("error" in fields) throw new Error(fields.error);
    expect(fields.map((f) => [f.name, f.id, f.kind, f.required])).toEqual([
      ["name", "f0", "text", true],
      ["email", "f1", "email", false],
      ["homepage", "f2", "url", false],
      ["birthdate", "f3", "date", false],
      ["age", "f4", "integer", false],
      ["agree", "f5", "boolean", false],
      ["friend", "f6", "choice", false],
      ["hero", "f7", "choice", false],
      ["pet", "f8", "choice", false],
      ["fish", "f9", "choices", false],
      ["tools", "f10", "choices", false],
    ]);
    expect(fields[0]).toMatchObject({ label: "Name", description: "Your full name" });
    expect(fields[4]).toMatchObject({ minimum: 1, maximum: 100, default: 42 });
    expect(fields[7]?.options).toEqual([{ value: "hero-1", label: "Superman" }]);
    expect(fields[8]?.options).toEqual([{ value: "pet-1", label: "Cats" }]);
    expect(fields[9]).toMatchObject({
      minItems: 1,
      maxItems: 3,
      options: [{ value: "fish-1", label: "Tuna" }],
    });
    expect(fields[10]?.default).toEqual(["Guitar"]);
  });

  it("refuses a nested object with a sentence naming the field", () => {
    expect(fieldsOf({ properties: { address: { type: "object" } } })).toEqual({
      error: 'The field "address" has a type this client cannot show (object).',
    });
  });
});
