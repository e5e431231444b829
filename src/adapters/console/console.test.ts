import { PassThrough } from "node:stream";
import { describe, expect, it, vi } from "vitest";
import type { Inbound, TurnRunner } from "../../runtime/contract.js";
import { runConsole } from "./index.js";

/** A runner that records what it is asked, answering each message at once. */
function recorder() {
  const texts: string[] = [];
  const runner: TurnRunner = {
    handle: async (inbound: Inbound) => {
      texts.push(inbound.text);
      const sink = inbound.reply.stream();
      sink.write("ok");
      await sink.finish();
    },
    command: async () => "",
    knows: async () => false,
    firstSight: async () => true,
    interact: async () => undefined,
  };
  return { runner, texts };
}

/** A terminal: a TTY stream that the test types or pastes into. */
function terminal() {
  const input = Object.assign(new PassThrough(), { isTTY: true });
  const sink = () => Object.assign(new PassThrough(), { columns: 80 }).resume();
  return { input, out: sink(), err: sink() };
}

describe("the terminal", () => {
  it("takes a multi-line paste as one message, and lines typed apart as separate ones", async () => {
    const { runner, texts } = recorder();
    const t = terminal();
    const done = runConsole({ runner, ...t });
    t.input.write("why does this fail?\n  at main (app.ts:1)\n  at run (app.ts:9)\n");
    await new Promise((r) => setTimeout(r, 200));
    t.input.write("thanks\n");
    await new Promise((r) => setTimeout(r, 200));
    t.input.end();
    await done;
    expect(texts).toEqual(["why does this fail?\n  at main (app.ts:1)\n  at run (app.ts:9)", "thanks"]);
  });

  it("answers every piped line on its own", async () => {
    const { runner, texts } = recorder();
    const input = new PassThrough();
    const done = runConsole({
      runner,
      input,
      out: new PassThrough().resume(),
      err: new PassThrough().resume(),
    });
    input.end("one\ntwo\n");
    await done;
    expect(texts).toEqual(["one", "two"]);
  });

  it("sends a line that starts with a path, or with //, to the model, and says how for an unknown /word", async () => {
    const { runner, texts } = recorder();
    const input = new PassThrough();
    let out = "";
    const sink = new PassThrough();
    sink.on("data", (d: Buffer) => {
      out += d.toString();
    });
    const done = runConsole({ runner, input, out: sink, err: new PassThrough().resume() });
    input.end("/etc/hosts has what?\n//help is a command, what does it do?\n/nosuch thing\n");
    await done;
    expect(texts).toEqual(["/etc/hosts has what?", "/help is a command, what does it do?"]);
    expect(out).toContain(
      "Unknown command /nosuch. To send a message that starts with /, begin it with // (//nosuch sends /nosuch).",
    );
  });

  it("stops the answer on Ctrl+C, and quits on a second Ctrl+C or on one with no answer running", async () => {
    const stops: string[] = [];
    let release: () => void = () => undefined;
    const runner: TurnRunner = {
      ...recorder().runner,
      handle: () =>
        new Promise<void>((resolve) => {
          release = resolve;
        }),
      stop: async (key) => {
        stops.push(key);
        return "";
      },
    };
    const t = terminal();
    let said = "";
    t.err.on("data", (c: Buffer) => {
      said += c.toString();
    });
    const done = runConsole({ runner, ...t });
    t.input.write("a long question\n");
    await new Promise((r) => setTimeout(r, 100));
    t.input.write("\x03");
    await new Promise((r) => setTimeout(r, 50));
    expect(stops).toEqual(["console:local"]);
    expect(said).toContain("stopping… (Ctrl+C again quits)");
    release();
    await new Promise((r) => setTimeout(r, 50));
    t.input.write("\x03");
    await done;
    expect(stops).toHaveLength(1);
  });

  it("stops the answer at once on /stop typed while it is written, not once it has ended", async () => {
    const stops: string[] = [];
    const commands: string[] = [];
    let release: () => void = () => undefined;
    const runner: TurnRunner = {
      ...recorder().runner,
      handle: () =>
        new Promise<void>((resolve) => {
          release = resolve;
        }),
      command: async (cmd) => {
        commands.push(cmd.name);
        return "";
      },
      stop: async (key) => {
        stops.push(key);
        release();
        return "";
      },
    };
    const t = terminal();
    const done = runConsole({ runner, ...t });
    t.input.write("a long question\n");
    await new Promise((r) => setTimeout(r, 100));
    t.input.write("/stop\n");
    await vi.waitFor(() => expect(stops).toEqual(["console:local"]));
    t.input.end();
    await done;
    // Taken at once: it did not also wait its turn to run as a command after the answer.
    expect(commands).toEqual([]);
  });

  it("quits on a second Ctrl+C while the answer is still stopping, without waiting for it to end", async () => {
    const stops: string[] = [];
    let streaming: NodeJS.Timeout | undefined;
    const runner: TurnRunner = {
      ...recorder().runner,
      // An answer that goes on streaming after the stop: a slow model or a tool that ignores cancellation.
      handle: (inbound) =>
        new Promise<void>(() => {
          const sink = inbound.reply.stream();
          streaming = setInterval(() => sink.write("word "), 10);
        }),
      stop: async (key) => {
        stops.push(key);
        return "";
      },
    };
    const t = terminal();
    let shown = "";
    t.out.on("data", (c: Buffer) => {
      shown += c.toString();
    });
    let ended = false;
    const done = runConsole({ runner, ...t }).then(() => {
      ended = true;
    });
    try {
      t.input.write("a long question\n");
      await vi.waitFor(() => expect(shown).toContain("word word"));
      t.input.write("\x03");
      await new Promise((r) => setTimeout(r, 50));
      expect(stops).toEqual(["console:local"]);
      expect(ended).toBe(false);
      t.input.write("\x03");
      await vi.waitFor(() => expect(ended).toBe(true), { timeout: 1_000 });
      await done;
      expect(stops).toHaveLength(1);
    } finally {
      clearInterval(streaming);
    }
  });
});

describe("a reader that goes away", () => {
  /** An output whose reader is gone: every write fails as a closed pipe's does. */
  function closedPipe() {
    const pipe = new PassThrough();
    pipe.write = () => {
      const err = Object.assign(new Error("write EPIPE"), { code: "EPIPE" });
      process.nextTick(() => pipe.emit("error", err));
      return false;
    };
    return pipe;
  }

  it("ends the chat and stops the answer being written when stdout's pipe closes, without an unhandled error", async () => {
    const stops: string[] = [];
    let release: () => void = () => undefined;
    const runner: TurnRunner = {
      handle: async (inbound: Inbound) => {
        inbound.reply.stream().write("the start of a long answer");
        await new Promise<void>((r) => {
          release = r;
        });
      },
      stop: async (key) => {
        stops.push(key);
        release();
        return "stopped";
      },
      command: async () => "",
      knows: async () => false,
      firstSight: async () => true,
      interact: async () => undefined,
    };
    const input = new PassThrough();
    input.write("tell me everything\nand then more\n");
    await runConsole({ runner, input, out: closedPipe(), err: new PassThrough().resume() });
    expect(stops).toEqual(["console:local"]);
  });

  it("ends the chat when the terminal's input fails (EIO as it closes)", async () => {
    const { runner, texts } = recorder();
    const t = terminal();
    const done = runConsole({ runner, ...t });
    t.input.emit("error", Object.assign(new Error("read EIO"), { code: "EIO" }));
    await done;
    expect(texts).toEqual([]);
  });
});
