// The W3C trace context (`traceparent`, `tracestate`) a request carries, read without loading OpenTelemetry: a
// front-end reads it on every call, tracing on or off, and only a sidecar that traces ever parses it
// (tracing/otlp-tracer.ts).

/** The W3C trace context a request carried. */
export interface TraceParent {
  readonly traceparent: string;
  readonly tracestate?: string | undefined;
}

/** A request's trace context from its headers (Node's lower-case names) or its MCP `_meta`; undefined when it carries none. */
export function readTraceHeaders(headers: Readonly<Record<string, unknown>>): TraceParent | undefined {
  const traceparent = headers["traceparent"];
  if (typeof traceparent !== "string") return undefined;
  const tracestate = headers["tracestate"];
  return typeof tracestate === "string" ? { traceparent, tracestate } : { traceparent };
}
