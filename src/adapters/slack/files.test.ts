import type { WebClient } from "@slack/web-api";
import { describe, expect, it } from "vitest";
import { messageFiles } from "./files.js";

const noReads = {
  files: {
    info: async () => {
      throw new Error("no files.info expected");
    },
  },
} as unknown as WebClient;

describe("a Slack message's files", () => {
  it("names a file Slack gives no address for (deleted, past a free plan's limit) as one that could not be read", async () => {
    const [file] = await messageFiles([{ id: "F1", name: "old.txt", mode: "tombstone" }], "xoxb-t", noReads);
    expect(file).toMatchObject({
      name: "old.txt",
      unreadable: "Slack did not give me this file (tombstone), so it could not be read",
    });
    await expect(file?.fetch()).rejects.toThrow("could not be read");
  });

  it("looks a Slack Connect stub up once, and keeps its private URL for a replica taking the turn over", async () => {
    const asked: unknown[] = [];
    const reads = {
      files: {
        info: async (args: unknown) => {
          asked.push(args);
          return {
            ok: true,
            file: {
              id: "F2",
              name: "plan.txt",
              mimetype: "text/plain",
              size: 16,
              url_private: "http://127.0.0.1:1/files/F2/plan.txt",
            },
          };
        },
      },
    } as unknown as WebClient;
    const files = await messageFiles(
      [{ id: "F2", mode: "file_access", file_access: "check_file_info" }],
      "xoxb-t",
      reads,
    );
    expect(asked).toEqual([{ file: "F2" }]);
    expect(files).toMatchObject([
      { name: "plan.txt", mimeType: "text/plain", size: 16, url: "http://127.0.0.1:1/files/F2/plan.txt" },
    ]);
    expect(files[0]?.unreadable).toBeUndefined();
  });
});
