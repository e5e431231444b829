import type { WebClient } from "@slack/web-api";
import { log } from "../../log.js";
import type { ResumeFrom } from "../../runtime/contract.js";
import type { StreamWriterOptions } from "../../runtime/stream-options.js";
import { stopStream, ThreadSnapshot } from "./resume.js";

/**
 * A status line a crashed process left at the end of a message. An answer whose last
 * paragraph is one italic line looks the same and would lose it: rare, and only when a
 * reply is resumed.
 */
function withoutStatusLine(text: string): string {
  return text.replace(/(?:^|\n\n)_[^\n]*_$/, "");
}

/**
 * The thread of a reply written earlier, maybe by a process that died: read once (after
 * an open stream is stopped) for the text its messages show, the messages the dead
 * process posted under its keys, and the native stream it began and never recorded.
 */
export class ResumedThread {
  readonly taken: ThreadSnapshot;
  /** The message found by `unrecorded`: its stream is stopped before it is written on. */
  private adopted: string | undefined;

  constructor(
    private readonly web: WebClient,
    reads: WebClient,
    private readonly place: { channel: string; threadTs: string },
    private readonly resume: ResumeFrom,
    /** The bot's own `bot_id`, whose messages the unrecorded one is among. */
    private readonly botId?: string,
  ) {
    this.taken = new ThreadSnapshot(reads, place.channel, place.threadTs);
  }

  /** The post + update writer's `resume`. */
  writerResume(): NonNullable<StreamWriterOptions["resume"]> {
    const { messages, retake, starting } = this.resume;
    return {
      messages,
      shown: (ts) => this.readBack(ts),
      ...(retake === undefined ? {} : { retake }),
      ...(starting === undefined ? {} : { unrecorded: () => this.unrecorded() }),
    };
  }

  /**
   * The native stream the dead process was starting when it died (`ResumeFrom.starting`),
   * if Slack made it: the bot's one message in the thread since then that the record does
   * not name and that no key, file or button says is something else.
   */
  private async unrecorded(): Promise<string | null> {
    const { starting, messages } = this.resume;
    if (starting === undefined || !this.botId) return null;
    const found = await this.taken.unrecorded(this.botId, starting, messages);
    this.adopted = found ?? undefined;
    if (found)
      log.info(
        { ts: found },
        "found the message a stopped process began and never recorded; writing on in it",
      );
    return found;
  }

  /** What a resumed reply's message shows, its stream stopped first if it was left open. */
  private async readBack(ts: string): Promise<string | null> {
    if (this.resume.streaming || ts === this.adopted) await stopStream(this.web, this.place.channel, ts);
    const shown = await this.taken.shown(ts);
    return shown === null ? null : withoutStatusLine(shown);
  }
}
