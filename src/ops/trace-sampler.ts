import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
} from "@opentelemetry/sdk-trace-node";

const NAMES = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
] as const;

/**
 * OpenTelemetry's `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`, read from the
 * environment the app was given (as the endpoint is), with the SDK's samplers. The
 * default, as OpenTelemetry's: `parentbased_always_on`. A value it cannot honour stops
 * the start with a sentence, where the SDK would only warn and trace everything.
 */
export function samplerFrom(env: NodeJS.ProcessEnv): Sampler {
  const name = (env.OTEL_TRACES_SAMPLER ?? "").trim().toLowerCase() || "parentbased_always_on";
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return new TraceIdRatioBasedSampler(ratio(env));
    case "parentbased_always_on":
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio(env)) });
    default:
      throw new Error(
        `OTEL_TRACES_SAMPLER is "${env.OTEL_TRACES_SAMPLER}", which Switchboard does not know: set it to one of ${NAMES.join(", ")}, or leave it unset to trace every turn.`,
      );
  }
}

/** `OTEL_TRACES_SAMPLER_ARG`: the share of traces kept, from 0 to 1 (1 when unset). */
function ratio(env: NodeJS.ProcessEnv): number {
  const arg = (env.OTEL_TRACES_SAMPLER_ARG ?? "").trim();
  if (arg === "") return 1;
  const value = Number(arg);
  if (!Number.isFinite(value) || value < 0 || value > 1)
    throw new Error(
      `OTEL_TRACES_SAMPLER_ARG is "${arg}", which is not a share of traces: set it to a number from 0 to 1 (0.1 keeps one turn in ten).`,
    );
  return value;
}
