import { afterEach, describe, expect, it } from "vitest";
import { SlackEmulator } from "./index.js";
import { rawCall } from "./raw-call.js";

let emu: SlackEmulator | undefined;
afterEach(async () => {
  await emu?.stop();
  emu = undefined;
});

const call = (e: SlackEmulator, method: string, args: Record<string, string>) =>
  rawCall<{ file?: Record<string, unknown> }>(e, method, args);

const NOTES = [{ name: "notes.txt", mimetype: "text/plain", bytes: Buffer.from("launch on friday") }];

/** The files of the events delivered for message `ts`. */
function deliveredFiles(e: SlackEmulator, ts: string): unknown[] {
  return e.delivery.deliveries
    .map((d) => d.payload.event as { ts?: string; files?: unknown[] } | undefined)
    .filter((ev) => ev?.ts === ts)
    .map((ev) => ev?.files);
}

describe("Slack emulator: files in a Slack Connect channel", () => {
  it("sends a stub for a file a person of another organization shares, and files.info gives the rest", async () => {
    emu = await SlackEmulator.start();
    emu.externalUser("U_EXT", "T_OTHER");
    const m = emu.mention("C1", "U_EXT", "see the plan", { files: NOTES });
    const id = m.files[0]?.id ?? "";
    const stub = [{ id, mode: "file_access", file_access: "check_file_info" }];
    // app_mention and message alike.
    expect(deliveredFiles(emu, m.ts)).toEqual([stub, stub]);

    const info = await call(emu, "files.info", { file: id });
    expect(info).toMatchObject({
      ok: true,
      file: { id, name: "notes.txt", mimetype: "text/plain", size: 16 },
    });
    const res = await fetch(String(info.file?.url_private_download), {
      headers: { authorization: `Bearer ${emu.botToken}` },
    });
    expect(await res.text()).toBe("launch on friday");
    expect(await call(emu, "files.info", { file: "F_NONE" })).toEqual({ ok: false, error: "file_not_found" });
  });

  it("answers files.info 100 times a minute for the workspace (Tier 4), then with 429 and Retry-After", async () => {
    emu = await SlackEmulator.start();
    emu.externalUser("U_EXT", "T_OTHER");
    const id = emu.post("C1", "U_EXT", "see the plan", { files: NOTES }).files[0]?.id ?? "";
    const ask = () =>
      fetch(`${emu!.apiUrl}files.info`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${emu!.botToken}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ file: id }).toString(),
      });
    const statuses: number[] = [];
    for (let n = 0; n < 100; n++) statuses.push((await ask()).status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    const refused = await ask();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await refused.json()).toEqual({ ok: false, error: "ratelimited" });
  });

  it("lists such a file as a stub in the thread's history too", async () => {
    emu = await SlackEmulator.start();
    emu.externalUser("U_EXT", "T_OTHER");
    const root = emu.post("C1", "U_ALICE", "the plan?", { files: NOTES });
    const m = emu.post("C1", "U_EXT", "see ours", { threadTs: root.ts, files: NOTES });
    const { messages } = await rawCall<{ messages: Array<{ files: Array<Record<string, unknown>> }> }>(
      emu,
      "conversations.replies",
      { channel: "C1", ts: root.ts },
    );
    expect(messages[0]?.files[0]).toMatchObject({ name: "notes.txt", mimetype: "text/plain" });
    expect(messages[1]?.files).toEqual([
      { id: m.files[0]?.id, mode: "file_access", file_access: "check_file_info" },
    ]);
  });

  it("sends a file of the bot's own workspace whole", async () => {
    emu = await SlackEmulator.start();
    const m = emu.mention("C1", "U_ALICE", "see the plan", { files: NOTES });
    const [files] = deliveredFiles(emu, m.ts) as Array<Array<Record<string, unknown>>>;
    expect(files?.[0]).toMatchObject({ name: "notes.txt", mimetype: "text/plain" });
    expect(files?.[0]?.url_private).toBeDefined();
  });
});
