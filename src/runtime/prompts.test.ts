import { describe, expect, it } from "vitest";
import type { PromptEntry, ToolHub } from "../mcp/types.js";
import { expandPrompt, expandPromptForm, listPrompts, parsePromptRequest } from "./prompts.js";

const PROMPTS: PromptEntry[] = [
  {
    server: "weather",
    name: "forecast",
    description: "The weather somewhere",
    arguments: [
      { name: "city", description: "Name of the city", required: true },
      { name: "days", required: false },
    ],
  },
  { server: "a", name: "hello", description: "", arguments: [] },
  { server: "b", name: "hello", description: "", arguments: [] },
];

function hub(prompts = PROMPTS): ToolHub & { asked: unknown[] } {
  const asked: unknown[] = [];
  return {
    asked,
    tools: () => [],
    status: () => [],
    call: async () => ({ ok: true, text: "", artifacts: [], ms: 0, server: "", tool: "" }),
    close: async () => undefined,
    prompts: () => prompts,
    getPrompt: async (server, name, args) => {
      asked.push({ server, name, args });
      return `${server}/${name} with ${JSON.stringify(args)}`;
    },
  };
}

describe("/prompt", () => {
  it("reads the name and key=value arguments, quoted or not", () => {
    expect(parsePromptRequest('forecast city="New York" days=3')).toEqual({
      name: "forecast",
      args: { city: "New York", days: "3" },
    });
    // As a phone types them: curly quotes, an apostrophe inside kept as typed.
    expect(parsePromptRequest("forecast city=“Val d’Isère” note=‘in C’")).toEqual({
      name: "forecast",
      args: { city: "Val d’Isère", note: "in C" },
    });
    expect(parsePromptRequest("weather/forecast city='São Paulo'")).toEqual({
      name: "weather/forecast",
      args: { city: "São Paulo" },
    });
  });

  it("asks the server for the text of a prompt whose arguments are right", async () => {
    const h = hub();
    expect(await expandPrompt(h, "forecast city=Paris")).toEqual({
      ask: 'weather/forecast with {"city":"Paris"}',
    });
    expect(await expandPrompt(h, "a/hello")).toEqual({ ask: "a/hello with {}" });
  });

  it("refuses what it cannot run with a sentence, and asks no server", async () => {
    const h = hub();
    const said = async (text: string) => {
      const outcome = await expandPrompt(h, text);
      return "say" in outcome ? outcome.say : "ask" in outcome ? `asked: ${outcome.ask}` : "a form";
    };
    expect(await said("")).toBe(
      "Which prompt? Say `/prompt <name> key=value …`; `/prompts` lists the prompts and their arguments.",
    );
    expect(await said("forecast Paris")).toBe(
      'Arguments are key=value pairs, like city=Paris; "Paris" has no key. Say `/prompt <name> key=value …`; `/prompts` lists the prompts and their arguments.',
    );
    expect(await said("forcast city=Paris")).toBe(
      'There is no prompt named "forcast". Available: weather/forecast, a/hello, b/hello.',
    );
    expect(await said("hello")).toBe(
      'Several servers offer a prompt named "hello": a/hello, b/hello. Say which, like /prompt a/hello.',
    );
    expect(await said("forecast")).toBe(
      "The prompt weather/forecast needs city=… (Name of the city). Say `/prompt <name> key=value …`; `/prompts` lists the prompts and their arguments.",
    );
    expect(await said("forecast city=Paris town=Lyon")).toBe(
      'The prompt weather/forecast takes city, days; "town" is not one of them.',
    );
    expect(h.asked).toEqual([]);
  });

  it("lists the prompts with their arguments, optional ones marked", () => {
    expect(listPrompts(hub())).toBe(
      [
        "Prompts (run one with /prompt <name> key=value …; ? marks an optional argument):",
        "• weather/forecast: The weather somewhere (city (Name of the city), days?)",
        "• a/hello: no description (no arguments)",
        "• b/hello: no description (no arguments)",
      ].join("\n"),
    );
    expect(listPrompts(hub([]))).toBe("None of the connected tool servers offers prompts.");
  });

  it("asks for missing required arguments in a form where one can be shown, and runs the submitted form", async () => {
    const h = hub();
    const outcome = await expandPrompt(h, "forecast days=3", { forms: true });
    if (!("form" in outcome)) throw new Error("expected a form");
    expect(outcome.form.fields).toEqual([
      {
        name: "city",
        id: "f0",
        label: "city",
        description: "Name of the city",
        kind: "text",
        required: true,
      },
      { name: "days", id: "f1", label: "days", kind: "text", required: false, default: "3" },
    ]);
    expect(outcome.form.via).toBe("prompt");
    expect(h.asked).toEqual([]);
    expect(await expandPromptForm(h, outcome.form.ref, { f0: " Paris ", f1: "" })).toEqual({
      ask: 'weather/forecast with {"city":"Paris"}',
    });
    expect(await expandPromptForm(h, "pfbm9uZQ", { f0: "x" })).toEqual({
      say: "The prompt none is no longer offered by any connected server.",
    });
  });

  it("asks, in a form of fewer inputs than the prompt has, for the required arguments and those given", async () => {
    const wide: PromptEntry = {
      server: "ops",
      name: "report",
      description: "",
      arguments: ["title", "severity", "owner", "team", "region", "notes"].map((name) => ({
        name,
        required: name === "title" || name === "owner",
      })),
    };
    const h = hub([wide]);
    const fields = async (text: string) => {
      const outcome = await expandPrompt(h, text, { forms: true, fieldsPerForm: 5 });
      return "form" in outcome ? outcome.form.fields.map((f) => `${f.id}:${f.name}`) : outcome;
    };
    expect(await fields("report")).toEqual(["f0:title", "f2:owner"]);
    expect(await fields("report region=eu")).toEqual(["f0:title", "f2:owner", "f4:region"]);
    expect(await fields("report severity=high team=db region=eu notes='see log'")).toEqual({
      say: 'The prompt ops/report needs title=…, owner=…; with the arguments you gave, that is more than one form holds, so type them after its name, like /prompt ops/report title=… owner=… severity=high team=db region=eu notes="see log".',
    });
    // A submission of the smaller form runs with the arguments it carries.
    expect(await expandPromptForm(h, "pfb3BzL3JlcG9ydA", { f0: "Disk full", f2: "bob", f4: "eu" })).toEqual({
      ask: 'ops/report with {"title":"Disk full","owner":"bob","region":"eu"}',
    });
    // Without a limit (Slack), every argument is in the form.
    const all = await expandPrompt(h, "report", { forms: true });
    expect("form" in all && all.form.fields.map((f) => f.name)).toEqual(wide.arguments.map((a) => a.name));
    expect(h.asked).toHaveLength(1);
  });
});
