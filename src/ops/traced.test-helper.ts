import { resourceFromAttributes } from "@opentelemetry/resources";
import { AlwaysOnSampler, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { useTracer } from "../core/spans.js";
import { BatchedTracerProvider } from "./batched-tracer.js";

/**
 * Tracing on for a test, through the bot's own tracer, every span kept in memory; returns
 * the spans ended so far. The test turns it off again with `useTracer(undefined)`.
 */
export function traceInMemory(service: string): () => ReturnType<InMemorySpanExporter["getFinishedSpans"]> {
  const exporter = new InMemorySpanExporter();
  const provider = new BatchedTracerProvider({
    processor: new SimpleSpanProcessor(exporter),
    resource: resourceFromAttributes({ "service.name": service }),
    sampler: new AlwaysOnSampler(),
  });
  useTracer(provider.getTracer("switchboard"));
  return () => {
    provider.flush();
    return exporter.getFinishedSpans();
  };
}
