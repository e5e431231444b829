import { type Params, str } from "./http-util.js";
import { BOT_ID, BOT_USER_ID, messageJson } from "./state.js";
import { type ApiContext, fail, type Handler } from "./web-api-context.js";

/** chat.postMessage / update / delete / postEphemeral, reactions, assistant.threads.*. */
export function chatHandlers(ctx: ApiContext): Record<string, Handler> {
  const { state, hooks } = ctx;

  const postMessage = (p: Params): Params => {
    const channel = ctx.postable(p);
    const thread_ts = ctx.threadTs(channel, p);
    const content = ctx.content(p, ctx.limits().postTextChars);
    const metadata = ctx.metadata(p);
    const message = state.addMessage({
      channel,
      thread_ts,
      user: BOT_USER_ID,
      bot_id: BOT_ID,
      ...content,
      ...(metadata ? { metadata } : {}),
    });
    hooks.echo("posted", message);
    return { channel, ts: message.ts, message: messageJson(message, hooks.baseUrl()) };
  };

  const update = (p: Params): Params => {
    const message = ctx.own(p);
    ctx.unarchived(message.channel);
    if (message.stream?.state === "streaming") fail("cant_update_message");
    const content = ctx.content(p, ctx.limits().updateTextChars);
    const metadata = ctx.metadata(p);
    const previous = { ...message };
    message.edits.push({ text: message.text, blocks: message.blocks, at: Date.now() });
    Object.assign(message, content, metadata ? { metadata } : {});
    hooks.echo("changed", message, previous);
    return { channel: message.channel, ts: message.ts, text: message.text };
  };

  const remove = (p: Params): Params => {
    const message = ctx.own(p);
    message.deleted = true;
    hooks.echo("deleted", message);
    return { channel: message.channel, ts: message.ts };
  };

  const postEphemeral = (p: Params): Params => {
    const channel = ctx.postable(p);
    const user = str(p, "user") ?? fail("user_not_found");
    if (!state.isMember(state.channels.get(channel)!, user)) fail("user_not_in_channel");
    const content = ctx.content(p, ctx.limits().postTextChars);
    const thread_ts = str(p, "thread_ts");
    state.ephemerals.push({
      channel,
      user,
      text: content.text,
      blocks: content.blocks,
      thread_ts,
      via: "chat.postEphemeral",
      shown: !thread_ts || state.activeThread(channel, thread_ts),
    });
    return { message_ts: state.clock.next() };
  };

  const react = (p: Params, add: boolean): Params => {
    const channel = ctx.channel(p);
    if (add) ctx.unarchived(channel);
    const message = state.find(channel, str(p, "timestamp") ?? "") ?? fail("message_not_found");
    const name = str(p, "name") ?? fail("invalid_name");
    const users = message.reactions.get(name) ?? new Set<string>();
    if (add && users.has(BOT_USER_ID)) fail("already_reacted");
    if (!add && !users.has(BOT_USER_ID)) fail("no_reaction");
    if (add) users.add(BOT_USER_ID);
    else users.delete(BOT_USER_ID);
    if (users.size) message.reactions.set(name, users);
    else message.reactions.delete(name);
    return {};
  };

  /** One to four prompts, as Slack takes them. */
  const promptsOf = (p: Params): { title: string; message: string }[] => {
    const prompts = Array.isArray(p.prompts) ? (p.prompts as { title: string; message: string }[]) : [];
    if (prompts.length === 0 || prompts.length > 4) fail("invalid_arguments");
    return prompts;
  };

  const assistant = (p: Params, what: "status" | "title" | "prompts"): Params => {
    const channel = ctx.channel(p, "channel_id");
    // Prompts may go to a DM without a thread: its Messages tab, as an agent app opens it.
    if (
      what === "prompts" &&
      str(p, "thread_ts") === undefined &&
      state.channels.get(channel)?.kind === "im"
    ) {
      const prompts = promptsOf(p);
      state.tabPrompts.set(channel, [
        ...(state.tabPrompts.get(channel) ?? []),
        { title: str(p, "title"), prompts },
      ]);
      return {};
    }
    const threadTs = str(p, "thread_ts") ?? fail("invalid_arguments");
    if (!state.find(channel, threadTs)) fail("thread_not_found");
    const thread = state.assistantThread(channel, threadTs);
    if (what === "status") {
      thread.status = str(p, "status") ?? fail("invalid_arguments");
      thread.statuses.push(thread.status);
    }
    if (what === "title") thread.titles.push(str(p, "title") ?? fail("invalid_arguments"));
    if (what === "prompts") thread.prompts.push({ title: str(p, "title"), prompts: promptsOf(p) });
    return {};
  };

  return {
    "chat.postMessage": postMessage,
    "chat.update": update,
    "chat.delete": remove,
    "chat.postEphemeral": postEphemeral,
    "reactions.add": (p) => react(p, true),
    "reactions.remove": (p) => react(p, false),
    "assistant.threads.setStatus": (p) => assistant(p, "status"),
    "assistant.threads.setTitle": (p) => assistant(p, "title"),
    "assistant.threads.setSuggestedPrompts": (p) => assistant(p, "prompts"),
  };
}
