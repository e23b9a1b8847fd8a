// Every `decision_source` the sidecar writes to a Run's `decisions.jsonl`, one row each: which records carry it.
// The decision on a call is also a metric label (`leviath_sidecar_decisions_total{source}`, metrics/sidecar-metrics.ts)
// and a key of the Run's `status.gateDecisions`; the other records (a stage move, a seed, a resume, a pool pod's
// binding) are audit only. The refusal table (sidecar-contract.ts) names the source of each refusal that is recorded;
// adding a source is one row here. The gate's own events keep upstream's spelling in `taint_audit.jsonl`
// (policy/gate-audit.ts), and map to the gate's rows here.

/** What a record with a decision source is about. */
export type DecisionRecordKind = "call" | "stage" | "seed" | "resume" | "binding" | "flip";

/** One decision source: the records that carry it, and whether it is one of the taint gate's. */
export interface DecisionSourceRow {
  readonly records: readonly DecisionRecordKind[];
  readonly gate?: true;
}

const gate = { records: ["call"], gate: true } as const;
const call = { records: ["call"] } as const;
const callOrSeed = { records: ["call", "seed"] } as const;
const stage = { records: ["stage"] } as const;

/** Every decision source by name (docs/sidecar-api.md and docs/metrics.md describe them for people). */
export const DECISION_SOURCES = {
  // The taint gate's, as upstream names them (snake_case as the metrics label them).
  auto_allow: gate,
  auto_block: gate,
  allowlist_rule: gate,
  scripted_rule: gate,
  yolo_auto_approve: gate,
  user_allow_once: gate,
  user_always_allow: gate,
  user_denied: gate,
  // The integrity gate's (issue 40): a held call refused, or let through by the untrusted-context allowlist, an
  // integrity rule, or a yolo run's waiver.
  integrity_held: call,
  integrity_allowlist: call,
  integrity_rule: call,
  integrity_waived: call,
  // The sidecar's own steps on a call, before and around the gate.
  taint_disabled: call,
  permission_deny: call,
  permission_ask: call,
  approval_unavailable: call,
  user_approved: call,
  user_declined: call,
  approval_timed_out: call,
  gate_timed_out: call,
  read_path: callOrSeed,
  workdir: callOrSeed,
  path_changed: call,
  tool_unavailable: call,
  invalid_arguments: call,
  audit_failed: call,
  client_gave_up: call,
  pending_full: call,
  hard_link: call,
  local_network: call,
  // A stage move: by the runtime (`POST /v1/stage`), by the model (MCP `next_stage`), or a refused one.
  runtime: stage,
  llm_choice: stage,
  transition: stage,
  // A seed the blueprint's own files filled, or a command seed `[safe_commands]` allowed.
  blueprint: { records: ["seed"] },
  safe_commands: { records: ["seed"] },
  // The switch to a resumed run's re-resolved grants.
  read_path_resume: { records: ["resume"] },
  // A warm pool's pod handing out its Run's binding.
  pool_binding: { records: ["binding"] },
  // A call a warn or audit candidate LeviathPolicy would decide otherwise (a would-flip; never enforced).
  policy_candidate: { records: ["flip"] },
} as const satisfies Readonly<Record<string, DecisionSourceRow>>;

type Sources = typeof DECISION_SOURCES;

/** A decision source. */
export type DecisionSourceName = keyof Sources;

/** The sources of a decision on a call (each one a metric label value). */
export type CallDecisionSource = { [S in DecisionSourceName]: "call" extends Sources[S]["records"][number] ? S : never }[DecisionSourceName];

/** The taint gate's sources. */
export type GateDecisionSource = { [S in DecisionSourceName]: Sources[S] extends { readonly gate: true } ? S : never }[DecisionSourceName];

/** The sources of a stage move's record. */
export type StageMoveSource = { [S in DecisionSourceName]: "stage" extends Sources[S]["records"][number] ? S : never }[DecisionSourceName];

const NAMES = Object.keys(DECISION_SOURCES) as DecisionSourceName[];

/** The sources of a decision on a call, in table order. */
export const CALL_DECISION_SOURCES: readonly CallDecisionSource[] = NAMES.filter((s): s is CallDecisionSource => (DECISION_SOURCES[s].records as readonly DecisionRecordKind[]).includes("call"));

/** The taint gate's sources, in table order. */
export const GATE_DECISION_SOURCES: readonly GateDecisionSource[] = NAMES.filter((s): s is GateDecisionSource => "gate" in DECISION_SOURCES[s]);

/** A record's `decision_source` as a row of the table, or undefined when it is none (a record from elsewhere). */
export function parseDecisionSource(value: unknown): DecisionSourceName | undefined {
  return typeof value === "string" && Object.hasOwn(DECISION_SOURCES, value) ? (value as DecisionSourceName) : undefined;
}
