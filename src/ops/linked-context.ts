import type { Context } from "@opentelemetry/api";

/*
 * OpenTelemetry's context (which span is active, whether tracing is suppressed) as a
 * chain with one value per link. The API's own context copies its whole Map at each
 * `setValue`, and every span a traced turn makes active sets one: measured once amid other
 * work on a 2-core AMD EPYC, 3.7 µs at the median against 0.4 µs for a link (a scratch
 * script, `trace.setSpan` on each). A lookup walks the chain, which is as long as the
 * spans are deep (a turn's are a few); one grown long by a caller deriving a context from
 * the last again and again is flattened.
 */

/** Past this many links a new context is flattened: each key once, with its latest value. */
const MAX_DEPTH = 32;

export class LinkedContext implements Context {
  /** The empty context: what is active when nothing set one. */
  static readonly ROOT = new LinkedContext(undefined, undefined, undefined, 0);

  private constructor(
    private readonly parent: LinkedContext | undefined,
    private readonly key: symbol | undefined,
    /** undefined for a deleted key: the API's context reads a deleted key as undefined. */
    private readonly value: unknown,
    private readonly depth: number,
  ) {}

  getValue(key: symbol): unknown {
    for (let at: LinkedContext | undefined = this; at; at = at.parent) if (at.key === key) return at.value;
    return undefined;
  }

  setValue(key: symbol, value: unknown): Context {
    return this.link(key, value);
  }

  deleteValue(key: symbol): Context {
    return this.link(key, undefined);
  }

  private link(key: symbol, value: unknown): Context {
    if (this.depth < MAX_DEPTH) return new LinkedContext(this, key, value, this.depth + 1);
    const latest = new Map<symbol, unknown>([[key, value]]);
    for (let at: LinkedContext | undefined = this; at; at = at.parent)
      if (at.key !== undefined && !latest.has(at.key)) latest.set(at.key, at.value);
    let flat = LinkedContext.ROOT;
    for (const [k, v] of latest) if (v !== undefined) flat = new LinkedContext(flat, k, v, flat.depth + 1);
    return flat;
  }
}
