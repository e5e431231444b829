import { SwitchboardError, toUserFacing } from "../core/errors.js";
import type { FormValues, FormView } from "../core/forms.js";
import type { PromptEntry, ToolHub } from "../mcp/types.js";
import { INTERACTION_ID_MAX } from "./interaction-ids.js";

/**
 * What `/prompt …` comes to: a message to answer as if the person had written it, a
 * sentence for them, or (where the platform can show one) a form asking for the arguments
 * it still needs.
 */
export type PromptOutcome = { ask: string } | { say: string } | { form: FormView };

/**
 * `forms`: the platform can show a form for missing arguments; `fieldsPerForm`: the most
 * inputs one of its forms holds (Discord's modals five), when it holds fewer than a prompt has.
 */
export interface PromptOptions {
  forms?: boolean;
  fieldsPerForm?: number;
}

/** A prompt form's submission carries this value after its ref. */
export const PROMPT_FORM = "prompt";
const REF_PREFIX = "pf";

const USAGE = "Say `/prompt <name> key=value …`; `/prompts` lists the prompts and their arguments.";

/** `name key=value key="two words"` into the name and the arguments; a sentence when it cannot be read. */
export function parsePromptRequest(text: string): { name: string; args: Record<string, string> } | string {
  // Phones and some chat clients turn typed quotes into curly ones: city=“New York” is meant as quoted.
  const tokens = [...text.matchAll(/(\S+?)=("([^"]*)"|'([^']*)'|[“„]([^”]*)”|‘([^’]*)’|\S*)|(\S+)/g)];
  const first = tokens[0];
  if (!first || first[7] === undefined) return `Which prompt? ${USAGE}`;
  const args: Record<string, string> = {};
  for (const t of tokens.slice(1)) {
    if (t[7] !== undefined) {
      return `Arguments are key=value pairs, like city=Paris; "${t[7]}" has no key. ${USAGE}`;
    }
    args[t[1] as string] = t[3] ?? t[4] ?? t[5] ?? t[6] ?? t[2] ?? "";
  }
  return { name: first[7], args };
}

function label(p: PromptEntry): string {
  return `${p.server}/${p.name}`;
}

function argsHelp(p: PromptEntry): string {
  if (p.arguments.length === 0) return "no arguments";
  return p.arguments
    .map((a) => `${a.name}${a.required ? "" : "?"}${a.description ? ` (${a.description})` : ""}`)
    .join(", ");
}

/** The prompts of every connected server, one line each, for `/prompts`. */
export function listPrompts(hub: ToolHub): string {
  const prompts = hub.prompts?.() ?? [];
  if (prompts.length === 0) return "None of the connected tool servers offers prompts.";
  const lines = prompts.map((p) => `• ${label(p)}: ${p.description || "no description"} (${argsHelp(p)})`);
  return `Prompts (run one with /prompt <name> key=value …; ? marks an optional argument):\n${lines.join("\n")}`;
}

/**
 * Finds the prompt, checks its arguments, and asks its server for the text. With `forms`,
 * a prompt whose required arguments are missing comes back as a form to fill in instead.
 */
export async function expandPrompt(
  hub: ToolHub,
  text: string,
  opts: PromptOptions = {},
): Promise<PromptOutcome> {
  const request = parsePromptRequest(text.trim());
  if (typeof request === "string") return { say: request };
  return runPrompt(hub, request, opts);
}

/** A submitted prompt form: the prompt its ref names, run with the values typed (by argument, in order). */
export async function expandPromptForm(
  hub: ToolHub,
  ref: string,
  values: FormValues,
): Promise<PromptOutcome> {
  const name = ref.startsWith(REF_PREFIX)
    ? Buffer.from(ref.slice(REF_PREFIX.length), "base64url").toString()
    : "";
  const prompt = (hub.prompts?.() ?? []).find((p) => label(p) === name);
  if (!prompt)
    return { say: `The prompt ${name || "of this form"} is no longer offered by any connected server.` };
  const args: Record<string, string> = {};
  prompt.arguments.forEach((a, i) => {
    const v = values[`f${i}`];
    const text = (Array.isArray(v) ? v.join(",") : (v ?? "")).trim();
    if (text) args[a.name] = text;
  });
  return runPrompt(hub, { name, args }, {});
}

type PromptArgument = PromptEntry["arguments"][number];

/**
 * The arguments a prompt's form asks for: all of them, or, where a form holds fewer, the
 * required ones and those given in the command (pre-filled, so the submission keeps them);
 * undefined when even those do not fit.
 */
function formArguments(
  prompt: PromptEntry,
  given: Record<string, string>,
  room: number,
): PromptArgument[] | undefined {
  if (prompt.arguments.length <= room) return prompt.arguments;
  const asked = prompt.arguments.filter((a) => a.required || given[a.name]);
  return asked.length <= room ? asked : undefined;
}

/** The form for a prompt's arguments (see formArguments); undefined when its name is too long to carry. */
function promptForm(
  prompt: PromptEntry,
  given: Record<string, string>,
  asked: readonly PromptArgument[],
): FormView | undefined {
  const ref = `${REF_PREFIX}${Buffer.from(label(prompt)).toString("base64url")}`;
  if (`sb:${ref}:${PROMPT_FORM}`.length > INTERACTION_ID_MAX) return undefined;
  return {
    ref,
    title: prompt.name,
    ...(prompt.description ? { intro: prompt.description } : {}),
    // Ids are the argument's place in the prompt, which expandPromptForm reads back.
    fields: asked.map((a) => ({
      name: a.name,
      id: `f${prompt.arguments.indexOf(a)}`,
      label: a.name,
      ...(a.description ? { description: a.description } : {}),
      kind: "text",
      required: a.required,
      ...(given[a.name] ? { default: given[a.name] } : {}),
    })),
    part: 0,
    count: 1,
    submitLabel: "Ask",
    via: PROMPT_FORM,
  };
}

async function runPrompt(
  hub: ToolHub,
  request: { name: string; args: Record<string, string> },
  opts: PromptOptions,
): Promise<PromptOutcome> {
  const prompts = hub.prompts?.() ?? [];
  const slash = request.name.indexOf("/");
  const matches = prompts.filter((p) => (slash > 0 ? label(p) === request.name : p.name === request.name));
  if (matches.length === 0) {
    const known = prompts.map(label).slice(0, 20).join(", ");
    return {
      say: `There is no prompt named "${request.name}". ${known ? `Available: ${known}.` : "No server offers prompts."}`,
    };
  }
  if (matches.length > 1) {
    return {
      say: `Several servers offer a prompt named "${request.name}": ${matches.map(label).join(", ")}. Say which, like /prompt ${label(matches[0] as PromptEntry)}.`,
    };
  }
  const prompt = matches[0] as PromptEntry;
  const known = new Set(prompt.arguments.map((a) => a.name));
  const unknown = Object.keys(request.args).filter((k) => !known.has(k));
  if (unknown.length > 0) {
    const takes = prompt.arguments.length ? `takes ${[...known].join(", ")}` : "takes no arguments";
    return { say: `The prompt ${label(prompt)} ${takes}; "${unknown[0]}" is not one of them.` };
  }
  const missing = prompt.arguments.filter((a) => a.required && !request.args[a.name]);
  if (missing.length > 0) {
    const needs = missing.map((a) => `${a.name}=…${a.description ? ` (${a.description})` : ""}`).join(", ");
    if (!opts.forms) return { say: `The prompt ${label(prompt)} needs ${needs}. ${USAGE}` };
    const asked = formArguments(prompt, request.args, opts.fieldsPerForm ?? Number.POSITIVE_INFINITY);
    if (!asked) {
      const typed = Object.entries(request.args).map(([k, v]) => `${k}=${/\s/.test(v) ? `"${v}"` : v}`);
      const example = [...missing.map((a) => `${a.name}=…`), ...typed].join(" ");
      return {
        say: `The prompt ${label(prompt)} needs ${needs}; with the arguments you gave, that is more than one form holds, so type them after its name, like /prompt ${label(prompt)} ${example}.`,
      };
    }
    const form = promptForm(prompt, request.args, asked);
    if (form) return { form };
    return { say: `The prompt ${label(prompt)} needs ${needs}. ${USAGE}` };
  }
  if (!hub.getPrompt) return { say: "Prompts cannot be run here." };
  try {
    const ask = await hub.getPrompt(prompt.server, prompt.name, request.args);
    if (!ask.trim())
      return { say: `The prompt ${label(prompt)} came back empty, so there is nothing to ask.` };
    return { ask };
  } catch (err) {
    return { say: err instanceof SwitchboardError ? err.userMessage : toUserFacing(err).message };
  }
}
