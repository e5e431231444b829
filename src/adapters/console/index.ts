import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { resolve } from "node:path";
import { createInterface, type Interface } from "node:readline";
import { encodeThread } from "../../core/thread.js";
import { findCommand, helpText } from "../../runtime/commands.js";
import type { TurnRunner } from "../../runtime/contract.js";
import { ConsoleReply } from "./reply.js";

export const CONSOLE_KEY = encodeThread({ platform: "console", name: "local" });

export interface ConsoleOptions {
  runner: TurnRunner;
  input?: NodeJS.ReadableStream & { isTTY?: boolean };
  out?: NodeJS.WritableStream;
  err?: NodeJS.WritableStream;
  cwd?: string;
}

/**
 * The terminal adapter: one thread (`console:local`) kept across runs. With piped stdin
 * every line is one message, answered in order, and the promise resolves at end of input.
 */
export async function runConsole(opts: ConsoleOptions): Promise<void> {
  const input = opts.input ?? process.stdin;
  const out = opts.out ?? process.stdout;
  const err = opts.err ?? process.stderr;
  const cwd = opts.cwd ?? process.cwd();
  const interactive = Boolean(input.isTTY);
  const rl = createInterface({ input, terminal: interactive, output: interactive ? out : undefined });
  const io = { out, err, cwd, artifactsDir: resolve(cwd, "artifacts") };
  let answering = false;
  let stopping = false;
  const quit = new AbortController();
  const quitted = once(quit.signal, "abort");
  // A reader gone (`chat | head` has its lines, the terminal was closed) ends the chat as
  // Ctrl+D does, and stops the answer nobody reads. Unheard, the stream's EPIPE or EIO
  // would end the process at once, before the answer was stopped and the store closed.
  const gone = () => {
    if (quit.signal.aborted) return;
    quit.abort();
    if (answering) opts.runner.stop?.(CONSOLE_KEY, USER).catch(() => undefined);
    rl.close();
  };
  // readline passes its input's error on as its own, thrown when nobody listens.
  rl.on("error", gone);
  for (const stream of new Set<NodeJS.EventEmitter>([input, out, err])) stream.on("error", gone);
  if (interactive) {
    err.write(
      "Switchboard chat: type a message, /help for commands, Ctrl+C stops an answer, Ctrl+D quits.\n",
    );
    rl.setPrompt("you> ");
    rl.prompt();
    // Ctrl+C stops the answer being written; with none, or pressed again while stopping, it quits.
    rl.on("SIGINT", () => {
      if (!answering || stopping || !opts.runner.stop) {
        quit.abort();
        rl.close();
        return;
      }
      stopping = true;
      err.write("\nstopping… (Ctrl+C again quits)\n");
      void opts.runner.stop(CONSOLE_KEY, USER);
    });
  }
  // `/stop` typed while an answer is written acts at once, as Ctrl+C does: queued behind
  // the answer it is for, it would only ever find that answer ended.
  const stopNow = (line: string): boolean => {
    if (!answering || stopping || !opts.runner.stop || line.trim().toLowerCase() !== "/stop") return false;
    stopping = true;
    err.write("stopping…\n");
    void opts.runner.stop(CONSOLE_KEY, USER);
    return true;
  };
  for await (const message of messagesOf(rl, interactive, stopNow)) {
    const text = message.trim();
    answering = true;
    try {
      if (text) {
        const handled = handleLine(text, opts.runner, io);
        handled.catch(() => undefined);
        // Quitting does not wait for an answer that will not stop: the caller's shutdown gives it its grace.
        await Promise.race([handled, quitted]);
      }
    } finally {
      answering = false;
      stopping = false;
    }
    if (quit.signal.aborted) return;
    if (interactive) rl.prompt();
  }
}

/** Lines closer together than this were pasted, not typed: they are one message. */
const PASTE_GAP_MS = 25;

/**
 * The messages read from the terminal. Piped input: every line is one message. In a
 * terminal, lines that arrive together (a multi-line paste) are one message, so a pasted
 * stack trace is asked about once, not line by line.
 */
async function* messagesOf(
  rl: Interface,
  interactive: boolean,
  /** Takes a typed line before it waits its turn; true when it was handled. */
  intercept: (line: string) => boolean,
): AsyncGenerator<string> {
  if (!interactive) {
    yield* rl;
    return;
  }
  const ready: string[] = [];
  let pending: string[] = [];
  let closed = false;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    if (pending.length) ready.push(pending.join("\n"));
    pending = [];
    wake?.();
  };
  rl.on("line", (line) => {
    if (pending.length === 0 && intercept(line)) return;
    pending.push(line);
    clearTimeout(timer);
    timer = setTimeout(flush, PASTE_GAP_MS);
  });
  rl.on("close", () => {
    clearTimeout(timer);
    closed = true;
    flush();
  });
  for (;;) {
    const next = ready.shift();
    if (next !== undefined) {
      yield next;
      continue;
    }
    if (closed) return;
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  }
}

/** One person at the terminal: no author name, so the model is not told who is who. */
const USER = { id: "console" };

async function handleLine(
  line: string,
  runner: TurnRunner,
  io: ConstructorParameters<typeof ConsoleReply>[0],
) {
  const user = USER;
  // `//…` is a message that starts with "/", the way chat clients escape their commands.
  const escaped = line.startsWith("//");
  let text = escaped ? line.slice(1) : line;
  const command = escaped ? null : /^\/(\w+)\s*(.*)$/.exec(text);
  const spec = command ? findCommand(command[1] ?? "") : undefined;
  // "/etc/hosts has what?": a first word with a "/" or "." past the name is a path, not a command.
  const path = command && !spec && /^\/\w+[/.]/.test(text);
  if (command && !path) {
    if (!spec) {
      const word = command[1];
      io.out.write(
        `Unknown command /${word}. To send a message that starts with /, begin it with // (//${word} sends /${word}).\n${helpText("/")}\n`,
      );
      return;
    }
    if (spec.name === "prompt" && runner.prompt) {
      const outcome = await runner.prompt(command[2] ?? "");
      // The terminal asks for no form: a prompt missing arguments comes back as a sentence.
      if (!("ask" in outcome)) {
        io.out.write(`${"say" in outcome ? outcome.say : ""}\n`);
        return;
      }
      io.err.write(`Asking: ${outcome.ask}\n`);
      text = outcome.ask;
    } else {
      const reply = await runner.command({
        name: spec.name,
        key: CONSOLE_KEY,
        platform: "console",
        user,
        arg: command[2] || undefined,
      });
      io.out.write(`${reply}\n`);
      return;
    }
  }
  await runner.handle({
    id: randomUUID(),
    key: CONSOLE_KEY,
    platform: "console",
    channel: "terminal",
    user,
    text,
    attachments: [],
    reply: new ConsoleReply(io),
  });
}
