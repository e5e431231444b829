import type { WebClient } from "@slack/web-api";
import { describe, expect, it } from "vitest";
import {
  ATTACHED_TEXT_MAX,
  messageFileList,
  readableText,
  type SlackMessageParts,
  slackMarkup,
} from "./message-text.js";
import { fromSlackText } from "./mrkdwn.js";
import { UserNames } from "./names.js";

const read = (m: SlackMessageParts) => fromSlackText(slackMarkup(m), "U_BOT");
const section = (text: string) => ({ type: "section", text: { type: "mrkdwn", text } });

describe("a Slack message's words", () => {
  it("reads an alert bot's attachment: title with its link, text and fields", () => {
    const alert = {
      text: "",
      attachments: [
        {
          color: "danger",
          pretext: "<!subteam^S0614TZR7|@oncall> new alert",
          title: "[FIRING:1] HighMemory",
          title_link: "https://alerts.example.com/1",
          text: "Memory above 95% on `web-1`",
          fields: [
            { title: "severity", value: "critical", short: true },
            { title: "since", value: "<!date^1392734382^{date} at {time}|Feb 18, 2014 at 6:39 AM>" },
          ],
          fallback: "[FIRING:1] HighMemory",
        },
      ],
    };
    expect(read(alert)).toBe(
      [
        "[attachment]",
        "@oncall new alert",
        "[FIRING:1] HighMemory (https://alerts.example.com/1)",
        "Memory above 95% on `web-1`",
        "severity: critical",
        "since: Feb 18, 2014 at 6:39 AM",
      ].join("\n"),
    );
  });

  it("reads an attachment that has only its fallback", () => {
    expect(read({ attachments: [{ fallback: "Build #12 failed" }] })).toBe("[attachment]\nBuild #12 failed");
  });

  it("reads a forwarded message as who said it, where, and what, with its files", () => {
    const file = { id: "F1", name: "log.txt", url_private: "https://files.example.com/F1" };
    const forward = {
      text: "can you look?",
      attachments: [
        {
          is_share: true,
          is_msg_unfurl: true,
          author_name: "Carol",
          channel_name: "ops",
          text: "",
          message_blocks: [
            {
              message: {
                blocks: [
                  {
                    type: "rich_text",
                    elements: [
                      {
                        type: "rich_text_section",
                        elements: [
                          { type: "text", text: "deploy <failed> for " },
                          { type: "user", user_id: "U_DAN" },
                          { type: "broadcast", range: "here" },
                        ],
                      },
                      {
                        type: "rich_text_list",
                        style: "bullet",
                        elements: [{ elements: [{ type: "text", text: "db-2" }] }],
                      },
                    ],
                  },
                ],
              },
            },
          ],
          files: [file],
        },
      ],
      files: [file],
    };
    expect(read(forward)).toBe(
      "can you look?\n\n[shared message from Carol in #ops]\ndeploy <failed> for @U_DAN@here\n• db-2",
    );
    expect(messageFileList(forward)).toEqual([file]);
  });

  it("reads a bot's blocks when its text is empty or only their summary, and a person's text once", () => {
    const blocks = [
      { type: "header", text: { type: "plain_text", text: "Deploy failed" } },
      { ...section("Service *api* on <#C0123ABC|>"), fields: [{ type: "mrkdwn", text: "*Exit:* 137" }] },
      {
        type: "context",
        elements: [
          { type: "mrkdwn", text: "run 731" },
          { type: "image", alt_text: "x" },
        ],
      },
      { type: "actions", elements: [{ type: "button", text: { type: "plain_text", text: "Retry" } }] },
    ];
    const shown = "*Deploy failed*\nService *api* on #C0123ABC\n*Exit:* 137\nrun 731";
    expect(read({ text: "", blocks })).toBe(shown);
    expect(read({ text: "Deploy failed", blocks })).toBe(shown);
    expect(read({ text: "Heads up", blocks })).toBe(`Heads up\n${shown}`);
    const typed = [
      {
        type: "rich_text",
        elements: [{ type: "rich_text_section", elements: [{ type: "text", text: "hi all" }] }],
      },
    ];
    expect(read({ text: "hi all", blocks: typed })).toBe("hi all");
  });

  it("bounds what attachments add, and never cuts the text", () => {
    const text = "x".repeat(5_000);
    const attachments = Array.from({ length: 20 }, (_, i) => ({ text: `alert ${i} `.repeat(60) }));
    const out = slackMarkup({ text, attachments });
    expect(out.startsWith(`${text}\n\n[attachment]\nalert 0`)).toBe(true);
    expect(out.length).toBeLessThanOrEqual(text.length + ATTACHED_TEXT_MAX + 60);
    expect(out).toMatch(/\n… \([\d,]+ more characters not shown\)$/);
  });

  it("names people mentioned by id alone once Slack says who they are", async () => {
    const reads = {
      users: {
        info: async ({ user }: { user: string }) => ({
          ok: true,
          user: { name: user.slice(2).toLowerCase() },
        }),
      },
    } as unknown as WebClient;
    const text = await readableText(
      { text: "<@U_BOT> ask <@U_BOB> and <@W_ERIN|erin>" },
      "U_BOT",
      new UserNames(reads),
    );
    expect(text).toBe("ask @bob and @erin");
  });
});

describe("Slack markup made readable", () => {
  it("uses the labels of user groups and dates, and says @here, @channel and @everyone", () => {
    expect(
      fromSlackText(
        "<!subteam^S0614TZR7|@oncall> <!subteam^S0614TZR8> at <!date^1392734382^{date}|Feb 18, 2014> " +
          "<!date^1392734382^{date_short}^https://example.com/> <!here> <!channel|channel> <!everyone>",
        "U_BOT",
      ),
    ).toBe("@oncall @S0614TZR8 at Feb 18, 2014 2014-02-18 14:39 UTC @here @channel @everyone");
  });

  it("keeps a channel's id when Slack leaves its name empty, and says a pasted address once", () => {
    expect(
      fromSlackText(
        "in <#C0123ABC|> and <#C0456DEF|ops>: <mailto:bob@example.com|bob@example.com> <https://a.io|https://a.io> <tel:+123|call>",
        "U_BOT",
      ),
    ).toBe("in #C0123ABC and #ops: bob@example.com https://a.io call (tel:+123)");
  });
});
