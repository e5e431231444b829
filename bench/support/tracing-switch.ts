/**
 * The built app with its tracing switched on and off while it runs, for the tracing
 * benchmark (bench/tracing.bench.ts), which compiles this file beside the build's own and
 * runs `node <build>/tracing-switch.js <build>/main.js start`, with
 * TRACING_SWITCH_ENDPOINT set to the OTLP receiver. (Not through tsx's loader: it turns
 * source maps on for the whole process, which makes every error's stack dearer and would
 * weigh on the turns traced or not.)
 *
 * The app is started as `main.js` starts it, with no endpoint in its environment, so its
 * own start leaves tracing off. On stdin, the first `on` starts tracing exactly as the app
 * starts it when an endpoint is set (ops/tracing.ts's `startTracing`, from the same build,
 * so the same modules the app's spans go through). `off` flushes it (every span ended so
 * far is exported, and the receiver has answered: a traced stretch pays for all of its own
 * exports) and takes its tracer away, as a process that never started tracing has none;
 * the next `on` gives it back. The exporter and its connection to the receiver live on
 * between stretches, as they do in a process traced for its whole life: starting and
 * stopping them for each stretch (about 2.3 ms of CPU a time, the new connection's
 * first export included) is no turn's cost. Each line is answered with the same line once
 * done (any other line changes nothing: the A/A run's stand-in for `on`).
 */
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [main, ...args] = process.argv.slice(2);
if (!main) throw new Error("usage: tracing-switch.js <build>/main.js start");
const endpoint = process.env.TRACING_SWITCH_ENDPOINT;
if (!endpoint) throw new Error("TRACING_SWITCH_ENDPOINT must name the OTLP receiver.");

interface Tracing {
  flush(): Promise<void>;
}
const { startTracing } = (await import(new URL("ops/tracing.js", pathToFileURL(main)).href)) as {
  startTracing(env: NodeJS.ProcessEnv): Tracing | undefined;
};
const spans = (await import(new URL("core/spans.js", pathToFileURL(main)).href)) as {
  tracer(): unknown;
  useTracer(t: unknown): void;
};

let tracing: Tracing | undefined;
/** The tracer `startTracing` registered, taken away while tracing is off. */
let tracer: unknown;
let queue = Promise.resolve();
createInterface({ input: process.stdin }).on("line", (line) => {
  queue = queue.then(async () => {
    if (line === "on") {
      if (tracing) spans.useTracer(tracer);
      else {
        tracing = startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
        tracer = spans.tracer();
      }
    } else if (line === "off" && tracing) {
      await tracing.flush();
      spans.useTracer(undefined);
    }
    process.stdout.write(`${line}\n`);
  });
});

// main.js reads its command from the arguments, as `node main.js start` would give them.
process.argv = [process.argv[0]!, main, ...args];
await import(pathToFileURL(main).href);
