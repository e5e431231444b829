import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  ElicitationCompleteNotificationSchema,
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
  ErrorCode,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import type { FieldOption, FormField } from "../core/forms.js";
import { log } from "../log.js";
import type { CallDeadline } from "./call-deadline.js";
import type { Elicit, ElicitationAnswer, ElicitationRequest } from "./types.js";

/** What the client declares: forms (spec 2025-06-18) and links to open (2025-11-25). */
export const ELICITATION_CAPABILITY = { form: {}, url: {} } as const;

/** A call in flight that can ask its person; elicitations are matched to one of these. */
export interface Asker {
  elicit: Elicit;
  /** Which conversation the call belongs to: one elicitation may only go to one conversation. */
  conversation: string;
  startedAt: number;
  /** The call's timeout: it stands still while a question that may be its own is open. */
  deadline: Pick<CallDeadline, "during">;
  /** Aborts when the call has ended. */
  over: AbortSignal;
}

/**
 * Answers a server's `elicitation/create` requests by asking the person whose tool call is
 * in flight on this connection. The protocol does not say which call a request belongs to
 * (over stdio nothing links them), so the request goes to the conversation with calls in
 * flight when there is exactly one; with calls of several conversations in flight it is
 * cancelled rather than shown to someone it may not concern.
 */
export function answerElicitations(
  client: Client,
  server: string,
  askers: () => readonly Asker[],
): Completions {
  const completions = new Completions();
  client.setRequestHandler(
    ElicitRequestSchema,
    async (request: ElicitRequest, extra): Promise<ElicitResult> => {
      const candidates = askers();
      const conversations = new Set(candidates.map((a) => a.conversation));
      if (conversations.size !== 1) {
        log.warn(
          { server, inFlight: candidates.length, conversations: conversations.size },
          conversations.size === 0
            ? "an MCP server asked for input with no tool call in flight; cancelled"
            : "an MCP server asked for input while calls of several conversations were in flight; cancelled, as it cannot be told whose it is",
        );
        return { action: "cancel" };
      }
      const ask = toRequest(server, request, completions);
      if ("error" in ask) throw new McpError(ErrorCode.InvalidParams, ask.error);
      try {
        return toResult(await askConversation(candidates, ask, extra.signal));
      } finally {
        if (ask.mode === "url") completions.forget(ask.elicitationId);
      }
    },
  );
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
    completions.complete(n.params.elicitationId);
  });
  return completions;
}

/**
 * Asks the person of the conversation whose calls are in flight (`calls`, all of one
 * conversation), through its newest call. Which of them asked is not known (one step's
 * parallel calls): none of them times out while the person answers, and the question is
 * withdrawn (`signal` aside: the server's cancel) only once all of them have ended, as
 * then nobody waits for its answer.
 */
export function askConversation(
  calls: readonly Asker[],
  ask: ElicitationRequest,
  signal: AbortSignal,
): Promise<ElicitationAnswer> {
  const newest = calls.reduce((a, b) => (b.startedAt > a.startedAt ? b : a));
  const ended = AbortSignal.any([signal, allAborted(calls.map((a) => a.over))]);
  return calls.reduce((q, a) => a.deadline.during(q), newest.elicit(ask, ended));
}

/** A signal that aborts once every one of `signals` has. */
function allAborted(signals: readonly AbortSignal[]): AbortSignal {
  const all = new AbortController();
  let left = signals.length;
  const one = () => {
    if (--left === 0) all.abort();
  };
  for (const s of signals) {
    if (s.aborted) one();
    else s.addEventListener("abort", one, { once: true });
  }
  if (signals.length === 0) all.abort();
  return all.signal;
}

/** Out-of-band flows that the server says are finished (`notifications/elicitation/complete`). */
export class Completions {
  private readonly waiting = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  /** Completions that came before anyone waited for them. */
  private readonly early = new Set<string>();

  completed(id: string): Promise<void> {
    if (this.early.delete(id)) return Promise.resolve();
    let entry = this.waiting.get(id);
    if (!entry) {
      let resolve = () => {};
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      entry = { promise, resolve };
      this.waiting.set(id, entry);
    }
    return entry.promise;
  }

  complete(id: string): void {
    const entry = this.waiting.get(id);
    if (entry) entry.resolve();
    else if (this.early.size < 1_000) this.early.add(id);
  }

  forget(id: string): void {
    this.waiting.delete(id);
    this.early.delete(id);
  }
}

function toRequest(
  server: string,
  request: ElicitRequest,
  completions: Completions,
): ElicitationRequest | { error: string } {
  const params = request.params;
  if (params.mode === "url") {
    return {
      mode: "url",
      server,
      message: params.message,
      url: params.url,
      elicitationId: params.elicitationId,
      completed: completions.completed(params.elicitationId),
    };
  }
  const fields = fieldsOf(params.requestedSchema);
  if ("error" in fields) return fields;
  return { mode: "form", server, message: params.message, fields };
}

function toResult(answer: ElicitationAnswer): ElicitResult {
  if (answer.action === "accept")
    return { action: "accept", ...(answer.content ? { content: answer.content } : {}) };
  return { action: answer.action };
}

type Property = Record<string, unknown>;

/** The form fields of an elicitation's `requestedSchema` (flat primitives and enums, as the spec allows). */
export function fieldsOf(schema: {
  properties?: Record<string, unknown>;
  required?: string[];
}): FormField[] | { error: string } {
  const required = new Set(schema.required ?? []);
  const fields: FormField[] = [];
  for (const [name, value] of Object.entries(schema.properties ?? {})) {
    if (!value || typeof value !== "object") return { error: `The field "${name}" has no schema.` };
    const p = value as Property;
    const field = fieldOf(name, `f${fields.length}`, p, required.has(name));
    if (!field)
      return { error: `The field "${name}" has a type this client cannot show (${String(p.type)}).` };
    fields.push(field);
  }
  return fields;
}

function fieldOf(name: string, id: string, p: Property, required: boolean): FormField | undefined {
  const base = {
    name,
    id,
    label: str(p.title) ?? name,
    ...(str(p.description) ? { description: str(p.description) } : {}),
    required,
  };
  const def = p.default;
  if (p.type === "array") {
    const items = (p.items ?? {}) as Property;
    const options = optionsOf(items);
    if (!options) return undefined;
    return {
      ...base,
      kind: "choices",
      options,
      ...(Array.isArray(def) ? { default: def.filter((d): d is string => typeof d === "string") } : {}),
      ...num("minItems", p.minItems),
      ...num("maxItems", p.maxItems),
    };
  }
  if (p.type === "boolean")
    return { ...base, kind: "boolean", ...(typeof def === "boolean" ? { default: def } : {}) };
  if (p.type === "number" || p.type === "integer") {
    return {
      ...base,
      kind: p.type,
      ...(typeof def === "number" ? { default: def } : {}),
      ...num("minimum", p.minimum),
      ...num("maximum", p.maximum),
    };
  }
  if (p.type !== "string") return undefined;
  const options = optionsOf(p);
  if (options)
    return { ...base, kind: "choice", options, ...(typeof def === "string" ? { default: def } : {}) };
  const kind =
    p.format === "email"
      ? "email"
      : p.format === "uri"
        ? "url"
        : p.format === "date"
          ? "date"
          : p.format === "date-time"
            ? "datetime"
            : "text";
  return {
    ...base,
    kind,
    ...(typeof def === "string" ? { default: def } : {}),
    ...num("minLength", p.minLength),
    ...num("maxLength", p.maxLength),
  };
}

/** `enum` (with optional legacy `enumNames`), `oneOf` / `anyOf` of `{const, title}`. */
function optionsOf(p: Property): FieldOption[] | undefined {
  if (Array.isArray(p.enum)) {
    const names = Array.isArray(p.enumNames) ? p.enumNames : [];
    return p.enum.map((v, i) => ({ value: String(v), label: str(names[i]) ?? String(v) }));
  }
  const list = Array.isArray(p.oneOf) ? p.oneOf : Array.isArray(p.anyOf) ? p.anyOf : undefined;
  if (!list) return undefined;
  return list.map((o) => {
    const option = (o ?? {}) as Property;
    return { value: String(option.const), label: str(option.title) ?? String(option.const) };
  });
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

function num<K extends string>(key: K, v: unknown): Partial<Record<K, number>> {
  return typeof v === "number" && Number.isFinite(v) ? ({ [key]: v } as Record<K, number>) : {};
}

/**
 * Runs a call; when the server refuses it until the person has finished a flow on a page
 * (error -32042 with URL elicitations), asks them to, waits for each to be finished, and
 * runs the call once more. Without a person to ask, the error stands.
 */
export async function withUrlPrerequisites<T>(
  run: () => Promise<T>,
  opts: { elicit?: Elicit; signal?: AbortSignal },
  server: string,
  completions: Completions | undefined,
): Promise<T> {
  try {
    return await run();
  } catch (err) {
    const elicitations = urlPrerequisites(err);
    if (!elicitations || !opts.elicit || !completions) throw err;
    const signal = opts.signal ?? new AbortController().signal;
    for (const e of elicitations) {
      const answer = await opts.elicit(
        {
          mode: "url",
          server,
          message: e.message,
          url: e.url,
          elicitationId: e.elicitationId,
          completed: completions.completed(e.elicitationId),
          mustComplete: true,
        },
        signal,
      );
      completions.forget(e.elicitationId);
      if (answer.action !== "accept") throw err;
    }
    return run();
  }
}

function urlPrerequisites(
  err: unknown,
): Array<{ message: string; url: string; elicitationId: string }> | undefined {
  if (!(err instanceof McpError) || err.code !== ErrorCode.UrlElicitationRequired) return undefined;
  const list = (err.data as { elicitations?: unknown } | undefined)?.elicitations;
  if (!Array.isArray(list)) return undefined;
  const out = list.flatMap((e) => {
    const o = (e ?? {}) as Record<string, unknown>;
    return typeof o.url === "string" && typeof o.elicitationId === "string"
      ? [
          {
            url: o.url,
            elicitationId: o.elicitationId,
            message: str(o.message) ?? "Open this page to go on.",
          },
        ]
      : [];
  });
  return out.length > 0 ? out : undefined;
}
