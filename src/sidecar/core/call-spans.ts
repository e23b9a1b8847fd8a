// One OpenTelemetry span per tool call the sidecar decides (issue 43), after the GenAI semantic conventions'
// `execute_tool` span (name `execute_tool {tool}`, kind INTERNAL, `gen_ai.operation.name`, `gen_ai.tool.name`,
// `gen_ai.tool.call.id`, `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`, `error.type`), with what the
// conventions do not define under `leviath.*`: the decision, its source, the refusal code, the rule, the taint before
// and after, the integrity, the stage, the mode, the Run and the Agent. A call's arguments and its result are exported
// only up to the admin's content level (default `public`): the arguments when the context's taint before the call is
// at most that level (anything in the context may be in them), the result when its label is.
//
// Cheap by construction: nothing is built while the call is decided but a few fields on its record; once the call has
// its final answer (an `ask` is not final) what its span needs is queued, and the span is made and ended after the
// answer has gone (its start time the call's admission, its end the answer's, each decision an event), then handed to
// the batch processor. Absent (tracing off), none of this runs: the ledger holds no `CallSpans`.
import { SpanKind, SpanStatusCode, type Attributes, type Tracer } from "@opentelemetry/api";
import type { DecisionSourceLabel } from "../../metrics/sidecar-metrics.ts";
import type { AuditEvent } from "../../policy/gate-audit.ts";
import type { Level } from "../../policy/levels.ts";
import { createOtlpTracing, extractParentContext } from "../../tracing/otlp-tracer.ts";
import { isContentExported, openCallSpan, type CallSpanState, type SpanDecision, type TraceContentLevel } from "./call-span-state.ts";
import type { CallOutcome } from "./call-outcomes.ts";
import type { CallRecord } from "./call-records.ts";

/** What the spans are made with. */
export interface CallSpansDeps {
  readonly tracer: Tracer;
  readonly content: TraceContentLevel;
  /** The context's taint now. */
  readonly taint: () => Level;
  /** The Run's name and namespace, the Agent's key. */
  readonly runName: string;
  readonly namespace?: string | undefined;
  readonly agent: () => string;
  /** The mode of the policy in force. */
  readonly mode: () => string;
  /** Milliseconds since the epoch, and a monotonic clock in milliseconds (a call's `started`). */
  readonly clock: () => number;
  readonly monotonicMs: () => number;
}

/** The rule a gate event names: an allowlist entry by its index, a scripted rule by its name. */
export function describeGateRule(source: AuditEvent["decision_source"]): string | undefined {
  if (typeof source === "string") return undefined;
  return "AllowlistRule" in source ? `allowlist[${source.AllowlistRule.rule_index}]` : source.ScriptedRule.script_name;
}

/** Makes each settled call's span. */
export class CallSpans {
  readonly #d: CallSpansDeps;
  /** Calls settled whose spans are not made yet. */
  #pending: SettledCall[] = [];

  /** Spans over a tracer. */
  constructor(deps: CallSpansDeps) {
    this.#d = deps;
  }

  #state(rec: CallRecord): CallSpanState {
    let s = rec.span;
    if (s === undefined) s = rec.span = openCallSpan(undefined);
    if (s.startedAt === 0) {
      s.startedAt = this.#d.clock() - (this.#d.monotonicMs() - rec.started);
      s.taintBefore = this.#d.taint();
      if (isContentExported(s.taintBefore, this.#d.content)) s.args = rec.args;
    }
    return s;
  }

  /** The gate's events of a pass: the rule that let the call through (or none), the clearance it was judged against. */
  gate(rec: CallRecord, events: readonly AuditEvent[]): void {
    const last = events.at(-1);
    if (last === undefined) return;
    const s = this.#state(rec);
    s.rule = describeGateRule(last.decision_source) ?? s.rule;
    s.clearance = last.clearance;
  }

  /** One decision about the call (an `ask`, then what its answer decided), in `stage`. */
  decided(rec: CallRecord, entry: { readonly decision: string; readonly source: DecisionSourceLabel; readonly code?: string | undefined }, stage: string): void {
    const s = this.#state(rec);
    s.stage = stage;
    s.decisions.push({ decision: entry.decision, source: entry.source, code: entry.code, at: this.#d.clock() });
  }

  /**
   * The call's answer: a final one (not an `ask`) ends its span. What the span needs is taken now (its end time, the
   * taint after, the Agent and mode in force); the span itself is made after the answer has gone (the next turn of
   * the event loop, in batches), so its making is never on the decision's path.
   */
  settled(rec: CallRecord, outcome: CallOutcome): void {
    if (outcome.kind === "ask") return;
    const s = this.#state(rec);
    if (s.ended) return;
    s.ended = true;
    const d = this.#d;
    this.#pending.push({ call: { id: rec.id, tool: rec.tool, target: rec.target, integrity: rec.integrity }, s, outcome, endedAt: d.clock(), taintAfter: d.taint(), agent: d.agent(), mode: d.mode() });
    if (this.#pending.length === 1) setImmediate(() => this.flush());
  }

  /** Makes the spans of the calls settled so far (the sidecar's stop calls it before the last export). */
  flush(): void {
    const pending = this.#pending;
    this.#pending = [];
    for (const p of pending) this.#make(p);
  }

  #make(p: SettledCall): void {
    const { s, outcome } = p;
    const span = this.#d.tracer.startSpan(`execute_tool ${p.call.tool}`, { kind: SpanKind.INTERNAL, startTime: s.startedAt, attributes: this.#attributes(p) }, extractParentContext(s.parent));
    if (s.decisions.length > 1) for (const d of s.decisions) span.addEvent("leviath.decision", decisionEventAttributes(d), d.at);
    if (outcome.kind === "deny") span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.body.code });
    span.end(p.endedAt);
    s.args = undefined;
  }

  #attributes(p: SettledCall): Attributes {
    const d = this.#d;
    const { s, outcome, call } = p;
    const last = s.decisions.at(-1);
    const a: Attributes = {
      "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.tool, "gen_ai.tool.call.id": call.id, "gen_ai.tool.type": "function",
      "leviath.run": d.runName, "leviath.agent": p.agent, "leviath.mode": p.mode,
      "leviath.decision": last?.decision ?? outcome.body.decision, "leviath.taint.before": s.taintBefore ?? p.taintAfter, "leviath.taint.after": p.taintAfter,
    };
    if (d.namespace !== undefined) a["leviath.namespace"] = d.namespace;
    if (last !== undefined) a["leviath.decision.source"] = last.source;
    if (s.decisions.length > 1) a["leviath.decision.asked"] = true;
    addCallFacts(a, call, s);
    addOutcome(a, outcome, d.content);
    return a;
  }
}

/** What of a call its span is made from once it settled. */
interface SettledCall {
  readonly call: Pick<CallRecord, "id" | "tool" | "target" | "integrity">;
  readonly s: CallSpanState;
  readonly outcome: Exclude<CallOutcome, { kind: "ask" }>;
  readonly endedAt: number;
  readonly taintAfter: Level;
  readonly agent: string;
  readonly mode: string;
}

/** The stage, the rule and clearance of the gate, the target, the integrity step's finding, and the arguments kept. */
function addCallFacts(a: Attributes, rec: SettledCall["call"], s: CallSpanState): void {
  if (s.stage !== undefined) a["leviath.stage"] = s.stage;
  if (s.rule !== undefined) a["leviath.rule"] = s.rule;
  if (s.clearance !== undefined) a["leviath.clearance"] = s.clearance.toLowerCase();
  if (rec.target !== undefined) a["leviath.target"] = rec.target;
  const integrity = rec.integrity;
  if (integrity !== undefined) {
    a["leviath.integrity"] = integrity.integrity;
    if (integrity.verdict.kind !== "pass") a["leviath.integrity.hold"] = integrity.verdict.finding.reason;
  }
  if (s.args !== undefined) a["gen_ai.tool.call.arguments"] = JSON.stringify(s.args);
}

/** What the answer adds: a refusal's code, who executes a handed-back call, an executed call's label and result (up to the content level). */
function addOutcome(a: Attributes, outcome: Exclude<CallOutcome, { kind: "ask" }>, content: TraceContentLevel): void {
  switch (outcome.kind) {
    case "deny":
      a["leviath.decision.code"] = outcome.body.code;
      a["error.type"] = outcome.body.code;
      return;
    case "run":
      a["leviath.executed_by"] = "runtime";
      return;
    case "allow":
      a["leviath.result.label"] = outcome.body.label;
      if (outcome.body.isError) a["error.type"] = "tool_error";
      if (isContentExported(outcome.body.label, content)) a["gen_ai.tool.call.result"] = outcome.body.result;
  }
}

function decisionEventAttributes(d: SpanDecision): Attributes {
  return d.code === undefined ? { "leviath.decision": d.decision, "leviath.decision.source": d.source } : { "leviath.decision": d.decision, "leviath.decision.source": d.source, "leviath.decision.code": d.code };
}

/** What a sidecar that traces is given: each call's spans once the run's parts exist, and the flush at its stop. */
export interface SidecarTracing {
  spans(deps: Omit<CallSpansDeps, "tracer" | "content" | "runName" | "namespace">): CallSpans;
  /** Sends what is queued and stops exporting. */
  shutdown(): Promise<void>;
}

/** Tracing to an OTLP/HTTP endpoint (`--otlp-traces-endpoint`), a call's content exported up to `content`. */
export function createSidecarTracing(opts: { readonly endpoint: string; readonly content: TraceContentLevel; readonly runName: string; readonly namespace?: string | undefined }): SidecarTracing {
  const resource: Record<string, string> = { "leviath.run": opts.runName, ...(opts.namespace === undefined ? {} : { "k8s.namespace.name": opts.namespace }) };
  const otlp = createOtlpTracing({ endpoint: opts.endpoint, serviceName: "leviath-sidecar", resource });
  const made: CallSpans[] = [];
  return {
    spans: (deps) => {
      const spans = new CallSpans({ ...deps, tracer: otlp.tracer, content: opts.content, runName: opts.runName, namespace: opts.namespace });
      made.push(spans);
      return spans;
    },
    shutdown: () => {
      for (const spans of made) spans.flush();
      return otlp.shutdown();
    },
  };
}
