// The reference runtime's spans over OpenTelemetry (loaded by run-tracing.ts only when tracing is on): the run's
// `invoke_agent {agent}` span, and a `chat {model}` span (kind CLIENT, the GenAI conventions' inference span) per
// model call under it, with the provider, the model, the token usage and the finish reason; never the messages.
import { SpanKind, SpanStatusCode, trace, ROOT_CONTEXT, type Attributes } from "@opentelemetry/api";
import { buildTraceHeaders, createOtlpTracing } from "../../tracing/otlp-tracer.ts";
import type { ModelProvider } from "./providers/types.ts";
import type { ProviderLookup } from "./provider-registry.ts";

/** A run being traced (or not: run-tracing.ts's NO_RUN_TRACING). */
export interface RunTracing {
  /** The run span's trace context, sent with every tool call (none when not traced). */
  readonly headers: Readonly<Record<string, string>> | undefined;
  /** The providers, each model call a `chat` span. */
  providers(lookup: (provider: string, timeoutMs?: number) => ProviderLookup): (provider: string, timeoutMs?: number) => ProviderLookup;
  /** Ends the run span with the run's exit code and sends what is queued. */
  end(exitCode: number, message: string): Promise<void>;
}

/** What names the run on its spans. */
export interface RunTraceNames {
  readonly agent: string;
  readonly run?: string | undefined;
  readonly namespace?: string | undefined;
}

/** A run span and its model calls' spans, exported to `endpoint`. */
export function createRunSpans(endpoint: string, names: RunTraceNames): RunTracing {
  const resource: Record<string, string> = { "leviath.agent": names.agent, ...(names.run === undefined ? {} : { "leviath.run": names.run }), ...(names.namespace === undefined ? {} : { "k8s.namespace.name": names.namespace }) };
  const otlp = createOtlpTracing({ endpoint, serviceName: "leviath-runtime", resource });
  const runAttributes: Attributes = { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": names.agent, ...(names.run === undefined ? {} : { "leviath.run": names.run }) };
  const run = otlp.tracer.startSpan(`invoke_agent ${names.agent}`, { kind: SpanKind.INTERNAL, attributes: runAttributes }, ROOT_CONTEXT);
  const parent = trace.setSpan(ROOT_CONTEXT, run);
  const traced = (provider: ModelProvider): ModelProvider => ({
    name: provider.name,
    async complete(request, signal) {
      const span = otlp.tracer.startSpan(`chat ${request.model}`, {
        kind: SpanKind.CLIENT, attributes: { "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider.name, "gen_ai.request.model": request.model },
      }, parent);
      try {
        const turn = await provider.complete(request, signal);
        span.setAttribute("gen_ai.response.finish_reasons", [turn.stopReason]);
        if (turn.usage !== undefined) {
          span.setAttribute("gen_ai.usage.input_tokens", turn.usage.inputTokens);
          span.setAttribute("gen_ai.usage.output_tokens", turn.usage.outputTokens);
        }
        span.setAttribute("leviath.tool_calls", turn.toolCalls.length);
        return turn;
      } catch (err) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        span.setAttribute("error.type", (err as Error).name);
        throw err;
      } finally {
        span.end();
      }
    },
  });
  return {
    headers: buildTraceHeaders(run),
    providers: (lookup) => (name, timeoutMs) => {
      const found = lookup(name, timeoutMs);
      return found.ok ? { ok: true, provider: traced(found.provider) } : found;
    },
    async end(exitCode, message) {
      run.setAttribute("leviath.exit_code", exitCode);
      if (exitCode !== 0) run.setStatus({ code: SpanStatusCode.ERROR, message: message.slice(0, 256) });
      run.end();
      await otlp.shutdown();
    },
  };
}
