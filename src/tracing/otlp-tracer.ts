// OpenTelemetry tracing for the sidecar and the reference runtime (issue 43): one tracer over a batch span processor
// and the OTLP/HTTP exporter, made only when an endpoint is configured (off by default: no tracer, no processor, no
// timer), and the W3C trace context (`traceparent`, `tracestate`) read from a request and written onto one. Nothing
// here is global: no global tracer provider, propagator or context manager is registered, so a library that traces
// through the global API stays a no-op.
import { ROOT_CONTEXT, trace, type Context, type Span, type Tracer } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import type { TraceParent } from "./trace-context.ts";

/** Where spans go: an OTLP/HTTP traces endpoint (`http://collector:4318/v1/traces`). */
export interface OtlpTracingOptions {
  readonly endpoint: string;
  /** `service.name` of the resource: `leviath-sidecar`, `leviath-runtime`. */
  readonly serviceName: string;
  /** More resource attributes (the Run, the Agent). */
  readonly resource?: Readonly<Record<string, string>>;
  /** How often a batch is sent (default 1 s: a Run's spans reach the collector soon after its calls). */
  readonly scheduledDelayMillis?: number;
}

/** A tracer and what ends it: flush sends what is queued, shutdown flushes and stops the processor. */
export interface OtlpTracing {
  readonly tracer: Tracer;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** The longest attribute value exported (a tool's arguments or result, where the content level lets them through). */
export const MAX_ATTRIBUTE_CHARS = 4096;

/** A tracer exporting over OTLP/HTTP through a batch processor (a span's end only queues it). */
export function createOtlpTracing(opts: OtlpTracingOptions): OtlpTracing {
  const exporter = new OTLPTraceExporter({ url: opts.endpoint });
  const processor = new BatchSpanProcessor({ exporter, scheduledDelayMillis: opts.scheduledDelayMillis ?? 1000, exportTimeoutMillis: 5000, maxQueueSize: 4096, maxExportBatchSize: 512 });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": opts.serviceName, ...opts.resource }),
    spanProcessors: [processor],
    spanLimits: { attributeValueLengthLimit: MAX_ATTRIBUTE_CHARS, attributeCountLimit: 64, eventCountLimit: 16 },
  });
  return {
    tracer: provider.getTracer("leviath"),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

const propagator = new W3CTraceContextPropagator();
const headerGetter = {
  keys: (carrier: Readonly<Record<string, string | undefined>>) => Object.keys(carrier),
  get: (carrier: Readonly<Record<string, string | undefined>>, key: string) => carrier[key],
};
const headerSetter = { set: (carrier: Record<string, string>, key: string, value: string) => void (carrier[key] = value) };

/** The parent context of a request's `traceparent` (and `tracestate`); the root context when absent or malformed. */
export function extractParentContext(parent: TraceParent | undefined): Context {
  if (parent === undefined) return ROOT_CONTEXT;
  return propagator.extract(ROOT_CONTEXT, { traceparent: parent.traceparent, tracestate: parent.tracestate }, headerGetter);
}

/** The `traceparent` (and `tracestate`) headers that make a request's receiver continue `span`'s trace. */
export function buildTraceHeaders(span: Span): Record<string, string> {
  const headers: Record<string, string> = {};
  propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, headerSetter);
  return headers;
}
