import { describe, expect, it } from "vitest";
import { parseSubcommand } from "./commands.js";
import { route, type SlackIdentity } from "./events.js";
import { fromSlackText, toMrkdwn, toSlackMarkdown } from "./mrkdwn.js";

const me: SlackIdentity = { teamId: "T1", botUserId: "U_BOT", botId: "B_BOT" };
const base = { type: "message", channel: "C1", ts: "2.0", user: "U_ALICE", text: "hi" };

describe("Slack text", () => {
  it("turns tables into code blocks for markdown_text and leaves the rest alone", () => {
    const md = "**Results**\n\n| a | b |\n|---|--:|\n| x | 10 |\n\n`code`";
    expect(toSlackMarkdown(md)).toBe("**Results**\n\n```\na |  b\n--+---\nx | 10\n```\n\n`code`");
  });

  it("converts Markdown to classic mrkdwn, escaping what Slack parses", () => {
    expect(toMrkdwn("# Title\n**bold** and *it* and ~~gone~~ [docs](https://x.io) a<b & c")).toBe(
      "*Title*\n*bold* and _it_ and ~gone~ <https://x.io|docs> a&lt;b &amp; c",
    );
    expect(toMrkdwn("```ts\nif (a < b) {}\n```")).toBe("```\nif (a &lt; b) {}\n```");
  });

  it("keeps a quote's > as Slack's quote bar and ends a link at its unbalanced parenthesis", () => {
    expect(toMrkdwn("📝 asks you:\n> Go ahead with **v2**?\n> a > b")).toBe(
      "📝 asks you:\n>Go ahead with *v2*?\n>a &gt; b",
    );
    expect(toMrkdwn("See [Foo](https://en.wikipedia.org/wiki/Foo_(bar)) (and more).")).toBe(
      "See <https://en.wikipedia.org/wiki/Foo_(bar)|Foo> (and more).",
    );
  });

  it("reads a user's message without the bot mention, with links and escapes undone", () => {
    const names = new Map([["U_BOB", "bob"]]);
    expect(
      fromSlackText(
        "<@U_BOT> ask <@U_BOB> about <https://a.io|this> in <#C1|general> &amp; &lt;x&gt;",
        "U_BOT",
        names,
      ),
    ).toBe("ask @bob about this (https://a.io) in #general & <x>");
  });

  it("parses slash subcommands", () => {
    expect(parseSubcommand("  ask  what is up ")).toEqual({ name: "ask", arg: "what is up" });
    expect(parseSubcommand("TOOLS")).toEqual({ name: "tools", arg: "" });
  });
});

describe("which Slack messages become turns", () => {
  const opts = { allowBots: false };

  it("ignores edits, deletions, its own messages and other bots", () => {
    expect(route({ ...base, subtype: "message_changed" }, me, opts).kind).toBe("ignore");
    expect(route({ ...base, subtype: "message_deleted" }, me, opts).kind).toBe("ignore");
    expect(route({ ...base, user: "U_BOT", text: "<@U_BOT>" }, me, opts).kind).toBe("ignore");
    expect(route({ ...base, user: undefined, bot_id: "B_BOT" }, me, opts).kind).toBe("ignore");
    expect(route({ ...base, bot_id: "B_OTHER", text: "<@U_BOT> hi" }, me, opts).kind).toBe("ignore");
    // A classic bot message (subtype bot_message, no user) in a DM: let in only with allowBots.
    const classic = {
      ...base,
      channel: "D1",
      channel_type: "im",
      user: undefined,
      subtype: "bot_message",
      bot_id: "B_HOOK",
    };
    expect(route(classic, me, { allowBots: true }).kind).toBe("dm");
    expect(route(classic, me, opts).kind).toBe("ignore");
    expect(route({ ...base, bot_id: "B_OTHER", text: "<@U_BOT> hi" }, me, { allowBots: true }).kind).toBe(
      "mention",
    );
  });

  it("answers mentions and DMs in their thread, and marks thread replies as follow-ups", () => {
    expect(route({ ...base, text: "<@U_BOT> hi" }, me, opts)).toEqual({
      kind: "mention",
      threadRoot: "2.0",
      midThread: false,
    });
    expect(route({ ...base, type: "app_mention", thread_ts: "1.0" }, me, opts)).toEqual({
      kind: "mention",
      threadRoot: "1.0",
      midThread: true,
    });
    expect(route({ ...base, channel: "D1", channel_type: "im" }, me, opts).kind).toBe("dm");
    expect(route({ ...base, thread_ts: "1.0" }, me, opts).kind).toBe("follow");
    expect(route(base, me, opts).kind).toBe("ignore");
    expect(route({ ...base, subtype: "file_share", text: "<@U_BOT> see file" }, me, opts).kind).toBe(
      "mention",
    );
  });
});
