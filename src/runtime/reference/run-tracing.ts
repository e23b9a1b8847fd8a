// The reference runtime's tracing (issue 43), off unless `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (the chart's
// `tracing.endpoint`, passed by the controller to the agent container): then the run is one `invoke_agent` span, each
// model call a `chat {model}` span under it, and every tool call carries the run span's W3C trace context to the
// sidecar (the `traceparent` header on /v1, `_meta.traceparent` on MCP), whose `execute_tool` spans continue it. No
// prompt, completion or tool content is put on the runtime's spans. OpenTelemetry is loaded only when it is on.
import { parseOtlpEndpoint } from "../../tracing/otlp-endpoint.ts";
import type { RunTracing, RunTraceNames } from "./run-spans.ts";

/** The environment variable the runtime exports to (OpenTelemetry's own name for a traces endpoint). */
export const OTLP_TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";

/** Tracing off: nothing sent, the providers as they are. */
export const NO_RUN_TRACING: RunTracing = { headers: undefined, providers: (lookup) => lookup, end: async () => {} };

/** Starts tracing a run when the environment names an endpoint ({@link NO_RUN_TRACING}, nothing loaded, when it does not); a malformed endpoint is the message. */
export async function startRunTracing(env: Readonly<Record<string, string | undefined>>, names: RunTraceNames): Promise<RunTracing | string> {
  const text = env[OTLP_TRACES_ENDPOINT_ENV];
  if (text === undefined || text === "") return NO_RUN_TRACING;
  const url = parseOtlpEndpoint(text);
  if (!url.ok) return `${OTLP_TRACES_ENDPOINT_ENV}: ${url.error}`;
  const { createRunSpans } = await import("./run-spans.ts");
  return createRunSpans(url.url, names);
}
