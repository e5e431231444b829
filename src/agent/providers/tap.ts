import type { ModelEvent, ModelRequest, Provider } from "./provider.js";

/*
 * What watches a model's stream without standing in its way: metering counts its usage,
 * tracing times it. Each used to wrap the provider in an async generator of its own, and
 * every event then passed through two more generators, three promises each, all paying
 * the process's AsyncLocalStorage hook: with two hundred answers streaming at once, these
 * two layers made one promise in six of the whole process. Here the watchers are called
 * as each event is handed on, and the stream passes through one plain iterator.
 */

/** One model call watched: its events as they are handed on, and its end. */
export interface StreamTap {
  /** Before the consumer sees `event`. Must not throw. */
  event(event: ModelEvent): void;
  /** Once: the stream ended (`error` when it failed; neither when the consumer stopped early). */
  end(error?: unknown): void;
}

/** A watcher of one model call, or undefined when it has nothing to watch (tracing off). */
export type TapFor = (req: ModelRequest, provider: Provider["name"]) => StreamTap | undefined;

/** The provider with every call watched by `taps` (in their order); a call none watches is the provider's own stream. */
export function tapProvider(provider: Provider, ...taps: TapFor[]): Provider {
  return {
    name: provider.name,
    listModels: (signal) => provider.listModels(signal),
    stream(req, signal) {
      const watching: StreamTap[] = [];
      for (const tapFor of taps) {
        const tap = tapFor(req, provider.name);
        if (tap) watching.push(tap);
      }
      const source = provider.stream(req, signal);
      if (watching.length === 0) return source;
      return tapped(source, watching.length === 1 ? watching[0]! : both(watching));
    },
  };
}

function both(taps: StreamTap[]): StreamTap {
  return {
    event: (event) => {
      for (const tap of taps) tap.event(event);
    },
    end: (error) => {
      for (const tap of taps) tap.end(error);
    },
  };
}

/** `source` handed on as it comes, `tap` told of each event and of the end. */
function tapped(source: AsyncIterable<ModelEvent>, tap: StreamTap): AsyncIterable<ModelEvent> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<ModelEvent> {
      const inner = source[Symbol.asyncIterator]();
      let ended = false;
      const end = (error?: unknown) => {
        if (ended) return;
        ended = true;
        tap.end(error);
      };
      return {
        next: () =>
          inner.next().then(
            (result) => {
              if (result.done) end();
              else if (!ended) tap.event(result.value);
              return result;
            },
            (error: unknown) => {
              end(error);
              throw error;
            },
          ),
        // The consumer stopped early (a break, a stop): the source is told, as a generator's would be.
        return: async (value?: unknown) => {
          end();
          const result = await inner.return?.(value);
          return result ?? { done: true, value: undefined };
        },
      };
    },
  };
}
