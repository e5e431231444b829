import { type Span, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { tracer } from "../../core/spans.js";
import { type WriteContext, WriteDropped } from "./write-plan.js";

/**
 * One write's span, under its caller's (a turn's): from when it was asked for to when it
 * was written, with its wait and the 429s it met. Undefined with tracing off, so that an
 * untraced write keeps no bookkeeping on the hot path.
 */
export class WriteSpan {
  private readonly asked = Date.now();
  private grantedAt: number | undefined;

  private constructor(readonly span: Span) {}

  static start(platform: string, what: string): WriteSpan | undefined {
    const span = tracer().startSpan(`${platform} ${what}`, {
      kind: SpanKind.CLIENT,
      attributes: { "switchboard.write.platform": platform, "switchboard.write.method": what },
    });
    return span.isRecording() ? new WriteSpan(span) : undefined;
  }

  granted(): void {
    this.grantedAt ??= Date.now();
  }

  end(rateLimited: number, err?: unknown): void {
    const { span } = this;
    span.setAttribute("switchboard.write.waited_ms", (this.grantedAt ?? Date.now()) - this.asked);
    span.setAttribute("switchboard.write.rate_limited", rateLimited);
    if (err !== undefined) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
      span.setAttribute(
        "error.type",
        err instanceof WriteDropped ? "dropped" : ((err as Error)?.name ?? "error"),
      );
    }
    span.end();
  }
}

/**
 * A platform client's call that passes straight through the granted write it runs in:
 * the write's span is named after its first call, so a reply's write shows as
 * "slack chat.postMessage", not as what the writer asked for; a write of several calls
 * lists them all.
 */
export function nameAfterCall(ctx: WriteContext, platform: string, method: string): void {
  const { span, calls } = ctx;
  if (!span || !calls) return;
  calls.push(method);
  if (calls.length === 1) {
    span.updateName(`${platform} ${method}`);
    span.setAttribute("switchboard.write.method", method);
  } else span.setAttribute("switchboard.write.calls", [...calls]);
}

/** Where a write in line keeps its span's part: the span, what to tell at its grant, the 429s it met. */
export interface SpannedWrite {
  span?: Span;
  onGrant?: () => void;
  limited: number;
}

/**
 * A write, enqueued by `enqueue`, inside its span (tracing on): `queued` hands the span to
 * the write in line, and the span ends with the write, its wait and its 429s. With tracing
 * off, the write as is, with no bookkeeping.
 */
export function inWriteSpan<T>(
  platform: string,
  what: string,
  enqueue: (queued: (w: SpannedWrite) => void) => Promise<T>,
): Promise<T> {
  const span = WriteSpan.start(platform, what);
  if (!span) return enqueue(() => undefined);
  let write: SpannedWrite | undefined;
  return enqueue((w) => {
    write = w;
    w.span = span.span;
    w.onGrant = () => span.granted();
  }).then(
    (value) => {
      span.end(write?.limited ?? 0);
      return value;
    },
    (err: unknown) => {
      span.end(write?.limited ?? 0, err);
      throw err;
    },
  );
}
