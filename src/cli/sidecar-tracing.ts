// `leviath sidecar --otlp-traces-endpoint URL [--trace-content LEVEL]`: the flags checked, and the tracer made only
// when an endpoint is given (OpenTelemetry is not even loaded otherwise: core/call-spans.ts is imported here, lazily).
import { DEFAULT_TRACE_CONTENT, parseTraceContentLevel, TRACE_CONTENT_LEVELS } from "../sidecar/core/call-span-state.ts";
import type { SidecarTracing } from "../sidecar/core/call-spans.ts";
import { parseOtlpEndpoint } from "../tracing/otlp-endpoint.ts";
import { UsageError } from "./io.ts";

/** The tracing flags, checked: an OTLP/HTTP endpoint, and the content level (only with an endpoint). */
export function parseTraceFlags(v: { readonly "trace-content"?: string | undefined; readonly "otlp-traces-endpoint"?: string | undefined }): { endpoint: string; content: NonNullable<ReturnType<typeof parseTraceContentLevel>> } | undefined {
  const text = v["trace-content"];
  const content = text === undefined ? DEFAULT_TRACE_CONTENT : parseTraceContentLevel(text);
  if (content === undefined) throw new UsageError(`--trace-content '${text}' is not one of ${TRACE_CONTENT_LEVELS.join(", ")}`);
  const endpoint = v["otlp-traces-endpoint"];
  if (endpoint === undefined) {
    if (text !== undefined) throw new UsageError("--trace-content goes with --otlp-traces-endpoint");
    return undefined;
  }
  const url = parseOtlpEndpoint(endpoint);
  if (!url.ok) throw new UsageError(`--otlp-traces-endpoint: ${url.error}`);
  return { endpoint: url.url, content };
}

/** The tracer, made only when an endpoint is given: OpenTelemetry is not even loaded otherwise. */
export async function startTracing(flags: ReturnType<typeof parseTraceFlags>, runName: string, namespace: string): Promise<SidecarTracing | undefined> {
  if (flags === undefined) return undefined;
  const { createSidecarTracing } = await import("../sidecar/core/call-spans.ts");
  return createSidecarTracing({ ...flags, runName, namespace });
}
