import { type Context, context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { OTLPTraceExporter as JsonTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPExporterBase, type OTLPExporterNodeConfigBase } from "@opentelemetry/otlp-exporter-base";
import {
  convertLegacyHttpOptions,
  createOtlpHttpExportDelegate,
} from "@opentelemetry/otlp-exporter-base/node-http";
import { ProtobufTraceSerializer, TraceExporterMetricsHelper } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace-node";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { ContextSlot } from "../core/async-context.js";
import { useTracer, VERSION } from "../core/spans.js";
import { safeAddress } from "../core/url-credentials.js";
import { log, registerSecret } from "../log.js";
import { BatchedTracerProvider } from "./batched-tracer.js";
import { LinkedContext } from "./linked-context.js";
import { encodeTraceRequest } from "./otlp-span-encoder.js";
import { samplerFrom } from "./trace-sampler.js";

export interface Tracing {
  /** Sends every span ended so far, and resolves once the receiver has them (or the export failed). */
  flush(): Promise<void>;
  /** Sends the spans still buffered, then stops. */
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry traces over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces
 * endpoint) is set; the exporter reads OpenTelemetry's own variables (headers, timeout).
 * Without one nothing is created and every span is the API's no-op.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  const url = tracesUrl(env);
  if (!url) return undefined;
  const protocol = tracesProtocol(env);
  const options = { url, headers: exporterHeaders(env) };
  const resource = resourceFromAttributes({
    [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME ?? "switchboard",
    [ATTR_SERVICE_VERSION]: VERSION,
  });
  const sampler = samplerFrom(env);
  const processor = new BatchSpanProcessor(
    protocol === "http/json" ? new JsonTraceExporter(options) : new ProtobufSpanExporter(options),
  );
  // Spans are recorded as plain objects and reach the SDK's batch processor in batches
  // (ops/batched-tracer.ts); the context manager lets spans find their parents across
  // awaits. Nothing here propagates trace context to other services, so no propagator is set.
  const contexts = new SlotContextManager();
  contexts.enable();
  context.setGlobalContextManager(contexts);
  const batched = new BatchedTracerProvider({ processor, resource, sampler, contexts });
  trace.setGlobalTracerProvider(batched);
  useTracer(batched.getTracer("switchboard", VERSION));
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? url;
  log.info({ endpoint: safeAddress(endpoint), protocol }, "tracing: spans are exported over OTLP/HTTP");
  return {
    async flush() {
      batched.flush();
      await processor.forceFlush().catch((err: unknown) => log.warn({ err }, "tracing: spans not sent"));
    },
    async shutdown() {
      batched.flush();
      await processor.shutdown().catch((err: unknown) => log.warn({ err }, "tracing: last spans not sent"));
      // A process may start the app again (tests): the next provider registers afresh.
      useTracer(undefined);
      trace.disable();
      context.disable();
    },
  };
}

/**
 * OTLP/HTTP in protobuf: OpenTelemetry's exporter (its transport, retries, timeouts and
 * variables) as @opentelemetry/exporter-trace-otlp-proto builds it, with the request
 * encoded by ops/otlp-span-encoder.ts (which says why) instead of the library's serializer.
 */
class ProtobufSpanExporter extends OTLPExporterBase<ReadableSpan[]> implements SpanExporter {
  constructor(config: OTLPExporterNodeConfigBase) {
    super(
      createOtlpHttpExportDelegate(
        convertLegacyHttpOptions(config, "TRACES", "v1/traces", { "Content-Type": "application/x-protobuf" }),
        {
          serializeRequest: encodeTraceRequest,
          deserializeResponse: ProtobufTraceSerializer.deserializeResponse,
        },
        "otlp_http_span_exporter",
        TraceExporterMetricsHelper,
        undefined,
      ),
    );
  }
}

/**
 * `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf`
 * (OpenTelemetry's default, and the cheaper to encode: written straight into bytes, where
 * JSON builds the whole request as objects first) or `http/json`. gRPC is not shipped.
 */
export function tracesProtocol(env: NodeJS.ProcessEnv): "http/protobuf" | "http/json" {
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "").trim();
  if (protocol === "" || protocol === "http/protobuf") return "http/protobuf";
  if (protocol === "http/json") return "http/json";
  throw new Error(
    `OTEL_EXPORTER_OTLP_PROTOCOL is "${protocol}", which Switchboard cannot send: set it to http/protobuf or http/json (gRPC is not supported; most collectors take OTLP/HTTP on port 4318).`,
  );
}

/**
 * Where spans are sent: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces`; undefined when neither is set or
 * `OTEL_SDK_DISABLED` is true (tracing off, whatever the endpoint). A value
 * that is not an http(s) address stops the start with a sentence: the exporter would
 * otherwise fail only at its first export, as a warning in the log.
 */
export function tracesUrl(env: NodeJS.ProcessEnv): string | undefined {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if ((!traces && !base) || env.OTEL_SDK_DISABLED === "true") return undefined;
  const variable = traces ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT";
  const url = traces ?? `${(base ?? "").replace(/\/+$/, "")}/v1/traces`;
  let protocol: string | undefined;
  try {
    protocol = new URL(url).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== "http:" && protocol !== "https:") {
    // The value itself is not repeated: it may hold credentials.
    const what = protocol ? `is a "${protocol}" address, not http:// or https://` : "is not a URL";
    throw new Error(
      `${variable} ${what}: set it to your collector's OTLP/HTTP endpoint (for example http://127.0.0.1:4318), or unset it to turn tracing off.`,
    );
  }
  return url;
}

/**
 * `OTEL_EXPORTER_OTLP_TRACES_HEADERS` or `OTEL_EXPORTER_OTLP_HEADERS` ("key=value,…",
 * values URL-encoded), read from the environment the app was given (not always
 * `process.env`); each value is kept out of the logs.
 */
function exporterHeaders(env: NodeJS.ProcessEnv): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS ?? "").split(
    ",",
  )) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    const value = decodeURIComponent(pair.slice(at + 1).trim());
    headers[pair.slice(0, at).trim()] = value;
    registerSecret(value);
  }
  return headers;
}

/**
 * OpenTelemetry's AsyncLocalStorage context manager, its context kept in a slot of the
 * process's one AsyncLocalStorage (core/async-context.ts) instead of a store of its own:
 * turning tracing on then adds no cost to every promise the process makes.
 */
class SlotContextManager extends AsyncLocalStorageContextManager {
  private readonly slot = new ContextSlot<Context>("opentelemetry");

  override active(): Context {
    return this.slot.get() ?? LinkedContext.ROOT;
  }

  override with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.slot.run(ctx, () => fn.apply(thisArg, args));
  }

  override disable(): this {
    return this;
  }
}
