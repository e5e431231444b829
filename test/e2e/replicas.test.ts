import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, startApp } from "../../src/app.js";
import { parseInteractionId } from "../../src/runtime/interaction-ids.js";
import { needsServer, serverUrl } from "../../src/store/testing.js";
import { clickComponent } from "../emulators/discord/components.js";
import { DiscordEmulator, waitFor } from "../emulators/discord/index.js";
import { LlmEmulator } from "../emulators/llm/index.js";
import { appEnv } from "../support/app-env.js";
import { repoRoot, scratchConfig } from "../support/chat-process.js";
import { isTitleRequest, lastUserText, toolResultsSinceUser } from "../support/llm-text.js";
import { untilQuiet } from "../support/quiet.js";
import { deleteAppKeys } from "../support/redis-databases.js";

const REDIS_URL = serverUrl("redis");
const filesystemServer = join(repoRoot, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

describe("two replicas on Redis (a rolling deploy)", needsServer("redis"), () => {
  let llm: LlmEmulator;
  let discord: DiscordEmulator;
  let replicas: App[] = [];
  let dir: string;

  beforeAll(async () => {
    await deleteAppKeys(REDIS_URL);
    llm = await LlmEmulator.start({
      responder: (req) =>
        isTitleRequest(req)
          ? { text: "Replica test" }
          : {
              text: `You said: ${lastUserText(req).replace(/^\[[^\]]*\]\s*/, "")}`,
              chunkSize: 4,
              delayMs: 20,
            },
    });
    discord = await DiscordEmulator.start();
    dir = scratchConfig("discord:\n  editIntervalMs: 250\n");
    const env = appEnv({ dir, llm, discord, store: REDIS_URL });
    // Both replicas hold a gateway session for the same shard, so both receive every event.
    replicas = [await startApp({ env, cwd: dir }), await startApp({ env, cwd: dir })];
  }, 90_000);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await discord?.stop();
    await llm?.close();
    await deleteAppKeys(REDIS_URL);
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers each message once, although both replicas receive it", async () => {
    const first = discord.userMessage(discord.state.general, "hello replicas", { mentionsBot: true });
    await waitFor(() => discord.botMessages(first.id).some((m) => m.content === "You said: hello replicas"), {
      timeoutMs: 25_000,
    });
    // A follow-up in the thread: one turn, with the first exchange from the shared session.
    discord.userMessage(first.id, "and again");
    await waitFor(() => discord.botMessages(first.id).some((m) => m.content === "You said: and again"), {
      timeoutMs: 25_000,
    });
    // Both replicas idle and nothing more reaching Discord: a second answer would be there by now.
    await Promise.all(replicas.map((r) => r.dispatcher.settled()));
    await untilQuiet(discord.requests);
    await Promise.all(replicas.map((r) => r.dispatcher.settled()));
    expect(discord.botMessages(first.id).map((m) => m.content)).toEqual([
      "You said: hello replicas",
      "You said: and again",
    ]);
    const asked = llm.requests.filter((r) => !isTitleRequest(r)).map((r) => lastUserText(r));
    expect(asked.filter((t) => t.endsWith("hello replicas"))).toHaveLength(1);
    expect(asked.filter((t) => t.endsWith("and again"))).toHaveLength(1);
    const followUp = llm.requests.find((r) => lastUserText(r).endsWith("and again"));
    expect(JSON.stringify(followUp?.messages)).toContain("You said: hello replicas");
  }, 60_000);
});

/** Two Discord replicas on Redis with server-filesystem, whose model writes deploy.txt once approved. */
interface ApprovalRig {
  llm: LlmEmulator;
  discord: DiscordEmulator;
  replicas: App[];
  dir: string;
  files: string;
}

/**
 * `yaml`: extra configuration; `content`: what the model writes; `answer`: its answer
 * once the call ran (given the call's result).
 */
async function approvalRig(opts: {
  yaml?: string;
  content: string;
  answer: (result: string) => { text: string; chunkSize?: number; delayMs?: number };
}): Promise<ApprovalRig> {
  await deleteAppKeys(REDIS_URL);
  const dir = scratchConfig(`discord:\n  editIntervalMs: 250\n${opts.yaml ?? ""}`);
  const files = join(dir, "files");
  mkdirSync(files);
  writeFileSync(
    join(dir, "mcp.json"),
    JSON.stringify({
      mcpServers: { filesystem: { command: process.execPath, args: [filesystemServer, files] } },
    }),
  );
  const llm = await LlmEmulator.start({
    responder: (req) => {
      if (isTitleRequest(req)) return { text: "Replica approval" };
      const results = toolResultsSinceUser(req);
      if (results.length > 0) return opts.answer(results.at(-1) ?? "");
      return {
        toolCalls: [
          {
            name: "filesystem__write_file",
            arguments: { path: join(files, "deploy.txt"), content: opts.content },
          },
        ],
      };
    },
  });
  const discord = await DiscordEmulator.start();
  const env = appEnv({ dir, llm, discord, store: REDIS_URL });
  const replicas = [await startApp({ env, cwd: dir }), await startApp({ env, cwd: dir })];
  return { llm, discord, replicas, dir, files };
}

async function stopRig(rig: ApprovalRig | undefined): Promise<void> {
  if (!rig) return;
  await Promise.all(rig.replicas.map((r) => r.stop()));
  await rig.discord.stop();
  await rig.llm.close();
  await deleteAppKeys(REDIS_URL);
  rmSync(rig.dir, { recursive: true, force: true });
}

/** The approve button of the question under message `m`, once it is there. */
function approveButton(discord: DiscordEmulator, m: { id: string }) {
  return waitFor(
    () =>
      discord
        .botMessages(m.id)
        .flatMap((x) =>
          ((x.components ?? []) as Array<{ components?: Array<{ custom_id: string }> }>).flatMap((r) =>
            (r.components ?? []).map((c) => ({ message: x, id: c.custom_id })),
          ),
        )
        .find((b) => b.id.endsWith(":approve")),
    { timeoutMs: 25_000 },
  );
}

describe(
  "an approval asked by one replica, decided on the other (a rolling deploy)",
  needsServer("redis"),
  () => {
    let rig: ApprovalRig;
    beforeAll(async () => {
      rig = await approvalRig({ content: "v2", answer: (result) => ({ text: `Done: ${result}` }) });
    }, 90_000);
    afterAll(() => stopRig(rig));

    it("writes the file once, after the click, in the replica that is still running", async () => {
      const { discord, replicas, llm, files } = rig;
      const s = discord.state;
      const m = discord.userMessage(s.general, "write the deploy file", { mentionsBot: true });
      const button = await approveButton(discord, m);
      // Both replicas are idle: the turn waits as a record, held by neither.
      await Promise.all(replicas.map((r) => r.dispatcher.settled()));
      await replicas[0]!.stop();
      clickComponent(discord, { message: button.message, customId: button.id, userId: s.alice.id });
      await waitFor(() => discord.botMessages(m.id).find((x) => x.content.startsWith("Done:")), {
        timeoutMs: 25_000,
      });
      await replicas[1]!.dispatcher.settled();
      await untilQuiet(discord.requests);
      expect(readFileSync(join(files, "deploy.txt"), "utf8")).toBe("v2");
      expect(discord.botMessages(m.id).filter((x) => x.content.startsWith("Done:"))).toHaveLength(1);
      expect(
        llm.requests.filter((r) => toolResultsSinceUser(r).length > 0 && !isTitleRequest(r)),
      ).toHaveLength(1);
    }, 60_000);
  },
);

describe(
  "an approval decided on the replica that did not ask it, which then stops while answering",
  needsServer("redis"),
  () => {
    let rig: ApprovalRig;
    const words = Array.from({ length: 80 }, (_, i) => `w${i}`).join(" ");
    beforeAll(async () => {
      rig = await approvalRig({
        // A short grace: the replica that stops hands the answer over instead of finishing it.
        yaml: "shutdown:\n  graceMs: 300\n",
        content: "v3",
        // The answer after the call, slowly: about 4 s.
        answer: () => ({ text: `Done: ${words} end.`, chunkSize: 4, delayMs: 30 }),
      });
    }, 90_000);
    afterAll(() => stopRig(rig));

    const turnsEnded = async (app: App) =>
      (await app.metrics.turns.get()).values.reduce((n, v) => n + v.value, 0);

    it("is finished by the replica that asked, which is still running", async () => {
      const { discord, replicas, files } = rig;
      const s = discord.state;
      const m = discord.userMessage(s.general, "write the deploy file", { mentionsBot: true });
      const button = await approveButton(discord, m);
      await Promise.all(replicas.map((r) => r.dispatcher.settled()));
      // The replica that ran the turn up to its question counted it as ended (parked).
      const ended = await Promise.all(replicas.map(turnsEnded));
      expect(ended.filter((n) => n > 0)).toHaveLength(1);
      const asker = ended[0]! > 0 ? replicas[0]! : replicas[1]!;
      const other = asker === replicas[0] ? replicas[1]! : replicas[0]!;
      // The click reaches the other replica only (as a load balancer would send it there).
      const id = parseInteractionId(button.id)!;
      await other.dispatcher.interact({
        id: "click-on-the-other",
        kind: "button",
        ref: id.ref,
        value: id.value ?? "",
        platform: "discord",
        user: { id: s.alice.id, name: "alice" },
        messageId: button.message.id,
        respond: async () => undefined,
      });
      await waitFor(() => discord.botMessages(m.id).find((x) => x.content.startsWith("Done:")), {
        timeoutMs: 25_000,
      });
      // The click reached only the other replica, so the turn goes on there (the asker's
      // desk would resume it only at its expiry). It stops in the middle of the answer.
      await other.stop();
      await waitFor(() => discord.botMessages(m.id).find((x) => x.content.endsWith("end.")), {
        timeoutMs: 30_000,
      });
      await asker.dispatcher.settled();
      await untilQuiet(discord.requests);
      expect(readFileSync(join(files, "deploy.txt"), "utf8")).toBe("v3");
      const whole = discord.botMessages(m.id).filter((x) => x.content.endsWith("end."));
      expect(whole).toHaveLength(1);
      expect(whole[0]!.content).toContain(words);
    }, 90_000);
  },
);
