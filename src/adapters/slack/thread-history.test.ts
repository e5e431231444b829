import type { WebClient } from "@slack/web-api";
import { describe, expect, it } from "vitest";
import { UserNames } from "./names.js";
import {
  HISTORY_FILE_LOOKUPS,
  HISTORY_LOOKUPS_AT_ONCE,
  NOT_LOOKED_UP,
  threadHistory,
} from "./thread-history.js";

const stub = (n: number) => ({ id: `F${n}`, mode: "file_access", file_access: "check_file_info" });

describe("a thread's earlier messages", () => {
  it("describes the latest files another organization shared a few at a time, never all at once", async () => {
    const messages = Array.from({ length: 30 }, (_, n) => ({
      ts: `1.${String(n + 1).padStart(6, "0")}`,
      user: "U_EXT",
      text: `part ${n}`,
      files: [stub(n)],
    }));
    const asked: string[] = [];
    let inFlight = 0;
    let most = 0;
    const reads = {
      conversations: { replies: async () => ({ ok: true, messages }) },
      users: { info: async () => ({ ok: true, user: { name: "ext" } }) },
      files: {
        info: async ({ file }: { file: string }) => {
          asked.push(file);
          inFlight += 1;
          most = Math.max(most, inFlight);
          await new Promise((resolve) => setTimeout(resolve, 10));
          inFlight -= 1;
          return {
            ok: true,
            file: { id: file, name: `${file}.txt`, url_private: `http://127.0.0.1:1/${file}` },
          };
        },
      },
    } as unknown as WebClient;

    const history = await threadHistory(
      { identity: () => ({ botUserId: "U_BOT" }), reads, token: "xoxb-t" },
      new UserNames(reads),
      { channel: "C1", ts: "2.000000", threadRoot: "1.000001" },
    );

    expect(most).toBe(HISTORY_LOOKUPS_AT_ONCE);
    expect(asked).toEqual(messages.slice(-HISTORY_FILE_LOOKUPS).map((m) => m.files[0]?.id));
    expect(history[0]?.text).toBe(`part 0 [file: F0; ${NOT_LOOKED_UP}]`);
    expect(history.at(-1)?.text).toBe("part 29 [file: F29.txt]");
  });
});
