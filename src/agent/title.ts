import { log } from "../log.js";
import { withTimeout } from "../signals.js";
import type { Provider } from "./providers/provider.js";
import { withoutThinking } from "./providers/think.js";

/** The first exchange is enough to name a thread; more only costs tokens. */
export const TITLE_INPUT_CHARS = 1_000;
export const TITLE_MAX_WORDS = 6;
export const TITLE_MAX_CHARS = 100;
export const DEFAULT_TITLE = "New conversation";
const TITLE_TIMEOUT_MS = 30_000;

const TITLE_SYSTEM = [
  "You name chat threads.",
  `Reply with a title of at most ${TITLE_MAX_WORDS} words for the conversation you are given, in the language of the conversation.`,
  "Reply with the title only: no quotation marks, no punctuation at the end, no Markdown, no lead-in such as 'Title:'.",
].join("\n");

const QUOTES = /["“”„«»「」『』`]/g;
const EDGE_SINGLE_QUOTES = /^['‘’]+|['‘’]+$/g;
const TRAILING_PUNCTUATION = /[\s.,;:!?…。、，；：！？·\-–—]+$/u;

function stripMarkdown(text: string): string {
  return text
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/^\s{0,3}(#{1,6}|>|[-*+]|\d+[.)])\s+/, "")
    .replace(/(\*\*|~~|\*)(\S(?:.*?\S)?)\1/g, "$2")
    .replace(/(^|\s)(__?)(\S(?:.*?\S)?)\2(?=\s|$)/g, "$1$3")
    .replace(/\*+/g, "");
}

/**
 * One short line: no quotes, no Markdown, no trailing punctuation, at most 100 characters;
 * without the reasoning `model` may have written first.
 */
export function cleanTitle(raw: string, model = ""): string {
  const line =
    withoutThinking(raw, model)
      .split(/\r?\n/)
      .map((l) => l.trim())
      .find((l) => l.length > 0) ?? "";
  let title = stripMarkdown(line)
    .replace(/^(title|titre|titel|título|タイトル|标题)\s*[:：]\s*/iu, "")
    .replace(QUOTES, "")
    .replace(/\s+/g, " ")
    .trim()
    .replace(EDGE_SINGLE_QUOTES, "")
    .trim();
  if (title.length > TITLE_MAX_CHARS) {
    const cut = title.slice(0, TITLE_MAX_CHARS);
    const space = cut.lastIndexOf(" ");
    title = space > TITLE_MAX_CHARS / 2 ? cut.slice(0, space) : cut;
  }
  return title.replace(TRAILING_PUNCTUATION, "").trim();
}

function firstWords(text: string, words: number): string {
  return text.split(/\s+/).filter(Boolean).slice(0, words).join(" ");
}

/** The first words of the first message, with mentions and links taken out. */
export function fallbackTitle(userText: string): string {
  const plain = userText
    .replace(/<[@#!&][^>]*>/g, " ")
    .replace(/<(https?:[^|>]+)(?:\|([^>]*))?>/g, (_m, _url: string, label?: string) => label ?? " ")
    .replace(/https?:\/\/\S+/g, " ")
    .replace(/```[\s\S]*?(```|$)/g, " ");
  const title = cleanTitle(firstWords(stripMarkdown(plain.replace(/\s+/g, " ").trim()), TITLE_MAX_WORDS));
  return title || DEFAULT_TITLE;
}

function excerpt(exchange: { user: string; assistant: string }): string {
  const user = exchange.user.trim();
  // The question names the topic best: give it most of the room, the answer the rest.
  const userPart = user.slice(
    0,
    Math.max(TITLE_INPUT_CHARS - 300, TITLE_INPUT_CHARS - exchange.assistant.length),
  );
  const assistantPart = exchange.assistant.trim().slice(0, TITLE_INPUT_CHARS - userPart.length);
  return `User: ${userPart}\n\nAssistant: ${assistantPart}`;
}

/**
 * A title of at most six words for a thread, from its first exchange. Never throws: on
 * any failure or an empty answer it returns `fallbackTitle(exchange.user)`.
 */
export async function makeTitle(
  exchange: { user: string; assistant: string },
  deps: { provider: Provider; model: string; signal?: AbortSignal },
): Promise<string> {
  const signal = withTimeout(TITLE_TIMEOUT_MS, deps.signal);
  try {
    let raw = "";
    const stream = deps.provider.stream(
      {
        model: deps.model,
        system: TITLE_SYSTEM,
        messages: [{ role: "user", content: excerpt(exchange) }],
        tools: [],
        // Room for reasoning models, which spend output tokens before the title.
        maxOutputTokens: 256,
      },
      signal,
    );
    for await (const event of stream) {
      if (event.type === "text") raw += event.delta;
    }
    const title = cleanTitle(firstWords(cleanTitle(raw, deps.model), TITLE_MAX_WORDS));
    if (title) return title;
    log.warn({ model: deps.model }, "title model returned no title; using the first words of the message");
  } catch (err) {
    log.warn({ err, model: deps.model }, "title generation failed; using the first words of the message");
  }
  return fallbackTitle(exchange.user);
}
