// What a call's span gathers while the call is decided (core/call-spans.ts makes the span), and the content level
// that bounds what of a call a span carries. Free of OpenTelemetry: the call records and the service hold these
// whether tracing is on or not, and OpenTelemetry is loaded only by a sidecar that traces.
import type { DecisionSourceLabel } from "../../metrics/sidecar-metrics.ts";
import { isLevelAtMost, type Level } from "../../policy/levels.ts";
import type { TraceParent } from "../../tracing/trace-context.ts";

/** Up to which sensitivity a call's arguments and result are exported; `none`: never. */
export type TraceContentLevel = Level | "none";

/** The content levels, in order. */
export const TRACE_CONTENT_LEVELS: readonly TraceContentLevel[] = ["none", "public", "internal", "private"];

/** The default: what is public only. */
export const DEFAULT_TRACE_CONTENT: TraceContentLevel = "public";

/** Parses a content level; undefined for anything else. */
export function parseTraceContentLevel(text: string): TraceContentLevel | undefined {
  return (TRACE_CONTENT_LEVELS as readonly string[]).includes(text) ? (text as TraceContentLevel) : undefined;
}

/** Whether content at `level` may be exported under `allowed`. */
export function isContentExported(level: Level, allowed: TraceContentLevel): boolean {
  return allowed !== "none" && isLevelAtMost(level, allowed);
}

/** One decision of a call, as its span's event says it. */
export interface SpanDecision {
  readonly decision: string;
  readonly source: DecisionSourceLabel;
  readonly code: string | undefined;
  readonly at: number;
}

/** What a call's span gathers while it is decided (on its record). */
export interface CallSpanState {
  readonly parent: TraceParent | undefined;
  /** Its start: the call's admission, milliseconds since the epoch. */
  startedAt: number;
  taintBefore: Level | undefined;
  /** Its arguments, kept only when they may be exported (the record drops them once settled). */
  args: Record<string, unknown> | undefined;
  stage: string | undefined;
  rule: string | undefined;
  clearance: string | undefined;
  decisions: SpanDecision[];
  /** Its span was made (a later answer makes none). */
  ended: boolean;
}

/** A new call's span state, its parent the trace context its request carried. */
export function openCallSpan(parent: TraceParent | undefined): CallSpanState {
  return { parent, startedAt: 0, taintBefore: undefined, args: undefined, stage: undefined, rule: undefined, clearance: undefined, decisions: [], ended: false };
}
