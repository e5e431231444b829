/**
 * The built app with its tracing switched on and off while it runs, for the tracing
 * benchmark (bench/tracing.bench.ts), which compiles this file beside the build's own and
 * runs `node <build>/tracing-switch.js <build>/main.js start`, with
 * TRACING_SWITCH_ENDPOINT set to the OTLP receiver. (Not through tsx's loader: it turns
 * source maps on for the whole process, which makes every error's stack dearer and would
 * weigh on the turns traced or not.)
 *
 * The app is started as `main.js` starts it, with no endpoint in its environment, so its
 * own start leaves tracing off. On stdin, `on` starts tracing exactly as the app starts
 * it when an endpoint is set (ops/tracing.ts's `startTracing`, from the same build, so
 * the same modules the app's spans go through) and `off` shuts it down as the app does at
 * its stop: the spans still buffered are exported first, so a traced stretch pays for all
 * of its own exports. Each line is answered with the same line once done (any other line
 * changes nothing: the A/A run's stand-in for `on`).
 */
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [main, ...args] = process.argv.slice(2);
if (!main) throw new Error("usage: tracing-switch.js <build>/main.js start");
const endpoint = process.env.TRACING_SWITCH_ENDPOINT;
if (!endpoint) throw new Error("TRACING_SWITCH_ENDPOINT must name the OTLP receiver.");

interface Tracing {
  shutdown(): Promise<void>;
}
const { startTracing } = (await import(new URL("ops/tracing.js", pathToFileURL(main)).href)) as {
  startTracing(env: NodeJS.ProcessEnv): Tracing | undefined;
};

let tracing: Tracing | undefined;
let queue = Promise.resolve();
createInterface({ input: process.stdin }).on("line", (line) => {
  queue = queue.then(async () => {
    if (line === "on") tracing ??= startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
    else if (line === "off") {
      await tracing?.shutdown();
      tracing = undefined;
    }
    process.stdout.write(`${line}\n`);
  });
});

// main.js reads its command from the arguments, as `node main.js start` would give them.
process.argv = [process.argv[0]!, main, ...args];
await import(pathToFileURL(main).href);
