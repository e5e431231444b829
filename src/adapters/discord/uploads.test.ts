import { afterEach, describe, expect, it } from "vitest";
import { boostGuild } from "../../../test/emulators/discord/guild.js";
import { DiscordEmulator, waitFor } from "../../../test/emulators/discord/index.js";
import type { Artifact } from "../../core/artifacts.js";
import { channelOfKey } from "./context.js";
import { type Harness, ScriptedRunner, startHarness } from "./harness.test-helper.js";

let h: Harness | undefined;
let emulator: DiscordEmulator | undefined;

afterEach(async () => {
  await h?.close();
  await emulator?.stop();
  h = undefined;
  emulator = undefined;
});

const MiB = 1024 * 1024;

function artifact(name: string, bytes: number): Artifact {
  return { title: name, filename: name, mimeType: "image/png", bytes: new Uint8Array(bytes).fill(7) };
}

/** An answer that says it attached files: one handed over while it is written, the rest after it. */
function answerWith(during: Artifact, after: Artifact[] = []) {
  const settled: string[] = [];
  const runner = new ScriptedRunner(async (inbound) => {
    const sink = inbound.reply.stream();
    sink.write("Here is the chart you asked for (attached).");
    const uploads = [inbound.reply.upload(during)];
    await sink.finish({ answered: true });
    uploads.push(...after.map((a) => inbound.reply.upload(a)));
    for (const [i, u] of uploads.entries()) {
      await u.then(
        () => settled.push(`${i}: resolved`),
        () => settled.push(`${i}: rejected`),
      );
    }
  });
  return { runner, settled };
}

/** Asks in #general and waits for the turn; the thread's bot messages as [text, file names]. */
async function ask(): Promise<Array<[string, string[]]>> {
  const harness = h!;
  harness.emulator.userMessage(harness.emulator.state.general, "make a chart", { mentionsBot: true });
  await waitFor(() => harness.runner.done.length === 1, { timeoutMs: 20_000 });
  const thread = channelOfKey(harness.runner.inbounds[0]!.key) ?? "";
  return harness.emulator
    .botMessages(thread)
    .map((m): [string, string[]] => [m.content, m.attachments.map((a) => a.filename)]);
}

describe("Discord adapter: files Discord does not take are said in the thread", () => {
  it("says so when Discord refuses a file as too large (413, 40005) though it is under the configured limit", async () => {
    // The guild takes 500 bytes (an unboosted guild's 10 MiB, scaled); the operator configured 10,000.
    emulator = await DiscordEmulator.start({ rateLimits: { speed: 10 }, maxFileBytes: 500 });
    const { runner, settled } = answerWith(artifact("chart.png", 1_000), [
      artifact("small.png", 100),
      artifact("big.png", 2_000),
    ]);
    h = await startHarness({ emulator, discord: { maxFileBytes: 10_000 }, runner });
    const shown = await ask();
    expect(shown[0]).toEqual(["Here is the chart you asked for (attached).", ["small.png"]]);
    expect(shown.slice(1).map(([text]) => text)).toEqual([
      "I made chart.png (1000 B), but Discord would not take a file that large here, so I could not attach it.",
      // Larger than what was refused: said without another try.
      "I made big.png (2.0 KB), but Discord would not take a file that large here, so I could not attach it.",
    ]);
    expect(settled.sort()).toEqual(["0: resolved", "1: resolved", "2: resolved"]);
    // Only the answer's final write carried chart.png: big.png, larger, is not sent at all.
    expect(emulator.requests.filter((r) => r.status === 413)).toHaveLength(1);
  });

  it("names the missing Attach Files permission (50013), and the files, without trying them again", async () => {
    emulator = await DiscordEmulator.start({ rateLimits: { speed: 10 } });
    emulator.denyBot(emulator.state.general, "ATTACH_FILES");
    const { runner, settled } = answerWith(artifact("chart.png", 100), [artifact("table.csv", 100)]);
    h = await startHarness({ emulator, runner });
    const shown = await ask();
    expect(shown[0]).toEqual(["Here is the chart you asked for (attached).", []]);
    expect(shown.slice(1)).toEqual([
      [
        "I made chart.png and table.csv, but I may not attach files here. Ask a server admin to give me the Attach Files permission in this channel, then ask again.",
        [],
      ],
    ]);
    expect(settled.sort()).toEqual(["0: resolved", "1: resolved"]);
    expect(emulator.requests.filter((r) => r.status === 403)).toHaveLength(1);
  });

  it("attaches a 12 MiB file in a guild boosted to tier 2 (50 MiB), which the default limit would refuse", async () => {
    emulator = await DiscordEmulator.start({ rateLimits: { speed: 10 } });
    const { runner, settled } = answerWith(artifact("scan.png", 12 * MiB));
    h = await startHarness({ emulator, runner });
    boostGuild(emulator, 2);
    await waitFor(() => h!.adapter.client.guilds.cache.get(emulator!.guildId)?.premiumTier === 2);
    expect(await ask()).toEqual([["Here is the chart you asked for (attached).", ["scan.png"]]]);
    expect(settled).toEqual(["0: resolved"]);
  });

  it("tells an /ask the limit its interaction gives, without trying a file over it", async () => {
    emulator = await DiscordEmulator.start({ rateLimits: { speed: 10 }, maxFileBytes: 500 });
    const { runner } = answerWith(artifact("chart.png", 1_000));
    h = await startHarness({ emulator, runner });
    const s = emulator.state;
    const rec = emulator.slash("ask", { question: "a chart?" }, s.dmChannel(s.bob.id).id, s.bob.id);
    await waitFor(() => h!.runner.done.length === 1);
    const said = [rec.originalId, ...rec.followupIds].map((id) => s.findMessage(id ?? "")?.content);
    expect(said).toContain(
      "I made chart.png (1000 B), but Discord only takes files up to 500 B here, so I could not attach it.",
    );
    expect(emulator.requests.filter((r) => r.status === 413)).toEqual([]);
  });
});

describe("Discord adapter: an upload Discord does not answer", () => {
  it("says it could not upload the file when @discordjs/rest gives the request up at its timeout", async () => {
    emulator = await DiscordEmulator.start({ rateLimits: { speed: 10 } });
    const settled: string[] = [];
    h = await startHarness({
      emulator,
      runner: new ScriptedRunner(async (inbound) => {
        const sink = inbound.reply.stream();
        sink.write("Here is the chart (attached).");
        await sink.finish({ answered: true });
        // The file goes into the answer's message by an edit, which Discord now carries out
        // only after discord.js has given the request up (15 s; 500 ms here).
        h!.adapter.client.rest.options.timeout = 500;
        emulator!.slow.set("PATCH /channels/:id/messages/:id", 1_000);
        await inbound.reply.upload(artifact("chart.png", 100)).then(
          () => settled.push("resolved"),
          () => settled.push("rejected"),
        );
      }),
    });
    const shown = await ask();
    expect(shown.map(([text]) => text)).toEqual([
      "Here is the chart (attached).",
      "I could not upload chart.png: Discord did not answer in time. If it is not above, ask me again.",
    ]);
    expect(settled).toEqual(["resolved"]);
  });
});
