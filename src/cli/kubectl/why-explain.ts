// Why one call was refused or asked, from its audit records and the run policy the Run was pinned to: the rule
// that decided (decision source, permission and the layer that set it, read-path verdict, the gate's taint and
// clearance) and the smallest change that would let it through (why-change.ts). Pure.
import { parseDecisionSource, type DecisionSourceName } from "../../api/decision-sources.ts";
import type { RunPolicy } from "../../api/run-policy.ts";
import { parseRefusalCode, type RefusalCode } from "../../api/sidecar-contract.ts";
import { READ_TOOLS } from "../../policy/classification.ts";
import { lookupPermission, resolveToolPermission } from "../../policy/permissions.ts";
import { describeIntegrityChange, describeIntegrityHold } from "../../policy/integrity-messages.ts";
import { HOLD_REASONS, type HoldReason } from "../../policy/integrity-gate.ts";
import { buildAgentPermissionChange, buildAllowlistChange, buildIntegrityAllowlistChange, buildAvailableToolsChange, buildBlueprintPermissionChange, buildDeclareChange, buildGrantChange, type Change, type Syntax } from "./why-change.ts";

/** The audit records of one call, as `why` reads them. */
export interface CallRecords {
  /** Its last decision record (`stages/<n>/decisions.jsonl`). */
  decision: Record<string, unknown>;
  /** The gate record that preceded it for the same tool (`taint_audit.jsonl`), if any. */
  gate?: Record<string, unknown> | undefined;
}

/** What `why` prints: the rule that decided, and the changes that would allow the call (none: nothing to change). */
export interface Explanation {
  rule: string;
  changes: Change[];
  note?: string;
}

/** What an explanation is computed from. */
export interface ExplainInput {
  records: CallRecords;
  /** The run policy the Run was pinned to (undefined: its ConfigMap could not be read). */
  runPolicy: RunPolicy | undefined;
  /** `namespace/name` of the Agent. */
  agentKey: string;
  syntax: Syntax;
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function stageOf(input: ExplainInput): { name: string; index: number } | undefined {
  const name = str(input.records.decision["stage"]);
  const index = input.runPolicy?.stages.findIndex((s) => s.name === name) ?? -1;
  return name === undefined ? undefined : { name, index: Math.max(index, 0) };
}

/** Which layer set the tool's permission: the admin's ceiling, the blueprint (a stage or the agent) or the default. */
function permissionLayer(input: ExplainInput, tool: string): { layer: "ceiling" | "stage" | "agent" | "default"; text: string } {
  const rp = input.runPolicy;
  if (rp === undefined) return { layer: "ceiling", text: "the LeviathPolicy's ceiling or the Agent's request (the run policy could not be read)" };
  const stage = rp.stages.find((s) => s.name === str(input.records.decision["stage"]));
  const ceiling = lookupPermission(rp.toolPermissions.ceiling, tool);
  const asked = lookupPermission(stage?.toolPermissions, tool) !== undefined ? "stage" : lookupPermission(rp.toolPermissions.blueprint, tool) !== undefined ? "agent" : undefined;
  const got = resolveToolPermission({ tool, userPermissions: rp.toolPermissions.ceiling, blueprintStage: stage?.toolPermissions ?? {}, blueprintAgent: rp.toolPermissions.blueprint, allowBlueprintPermissions: rp.toolPermissions.allowBlueprintPermissions });
  if (ceiling !== undefined && ceiling === got.permission) return { layer: "ceiling", text: `the LeviathPolicy's ceiling (spec.toolPermissions or spec.agentToolPermissions["${input.agentKey}"]: ${tool} = ${ceiling})` };
  if (asked !== undefined) return { layer: asked, text: `the Agent's request (${asked === "stage" ? `stage '${stage?.name}'` : "agent-wide"} toolPermissions: ${tool} = ${got.permission})` };
  return { layer: "default", text: `the built-in default for ${tool} (${got.permission}; nothing configures it)` };
}

function explainPermission(input: ExplainInput, tool: string, permission: "deny" | "ask"): Explanation {
  const { layer, text } = permissionLayer(input, tool);
  const want = permission === "deny" ? "ask" : "allow";
  const rule = `tool permission: ${tool} is '${permission}', set by ${text}`;
  const stage = stageOf(input);
  const changes = layer === "stage" || layer === "agent"
    ? [buildBlueprintPermissionChange(input.syntax, { key: input.agentKey, stage: layer === "stage" ? stage : undefined }, tool, want)]
    : [buildAgentPermissionChange(input.syntax, input.agentKey, tool, want)];
  return { rule, changes, ...(permission === "deny" ? { note: `'ask' lets a person approve each call; 'allow' runs it without asking` } : {}) };
}

function explainGate(input: ExplainInput, tool: string): Explanation {
  const gate = input.records.gate;
  const taint = str(gate?.["taint_level"])?.toLowerCase() ?? "internal";
  const clearance = str(gate?.["clearance"])?.toLowerCase() ?? "public";
  const target = str(input.records.decision["target"]);
  const rule = `taint gate: the context holds ${taint} data and ${tool} may carry out only ${clearance}${target ? `, to '${target}'` : " (it names no target)"}; no allowlist or CEL rule allowed it`;
  return { rule, changes: [buildAllowlistChange(input.syntax, tool, taint, target)], note: "the rule lets every such call through without asking; answering the prompt allows this one" };
}

function parseHoldReason(value: unknown): HoldReason | undefined {
  return HOLD_REASONS.find((r) => r === value);
}

/** An integrity hold (issue 40): why, from where, and the change that would allow it, in one sentence. */
function explainIntegrity(input: ExplainInput, tool: string, reason: HoldReason): Explanation {
  const d = input.records.decision;
  const raw = d["untrusted_entry"];
  const e = raw !== null && typeof raw === "object" ? raw as Record<string, unknown> : undefined;
  const entry = e === undefined ? undefined : { region: str(e["region"]) ?? "?", entryId: str(e["id"]) ?? "?", tool: str(e["tool"]) };
  const target = str(d["target"]);
  const targets = target === undefined ? [] : [target];
  const held = describeIntegrityHold(tool, { reason, entry, argument: str(d["untrusted_argument"]), targets });
  const rule = `integrity: ${tool} was held because ${held}; to allow it, ${describeIntegrityChange(tool, reason, targets)}`;
  if (reason === "untrusted-target") return { rule, changes: [], note: "no wildcard lifts this hold: a value the attacker wrote chose the target (only an integrity allowlist entry naming the target exactly vouches for it)" };
  return { rule, changes: [buildIntegrityAllowlistChange(tool, target, reason === "unlisted-target" ? "taint" : "integrity")] };
}

/** A refusal's code as the record has it: its row (undefined when none) and its text, as printed. */
interface RecordedCode {
  readonly code: RefusalCode | undefined;
  readonly text: string | undefined;
}

function explainReadPath(input: ExplainInput, { code, text }: RecordedCode): Explanation {
  const paths = Array.isArray(input.records.decision["paths"]) ? (input.records.decision["paths"] as unknown[]).filter((p): p is string => typeof p === "string") : [];
  const shown = paths.length > 0 ? paths.join(", ") : "(the path)";
  if (code === "outside-workdir") {
    return { rule: `workdir: ${shown} is outside the Run's workspace, and no read path (declared by the Agent and granted by the LeviathPolicy) covers it (outside-workdir)`, changes: [buildDeclareChange(input.syntax, input.agentKey, paths), buildGrantChange(input.syntax, input.agentKey, paths)] };
  }
  if (code === "not-declared") {
    return { rule: `read path: ${shown} is outside the workdir and the Agent does not declare it (not-declared)`, changes: [buildDeclareChange(input.syntax, input.agentKey, paths), buildGrantChange(input.syntax, input.agentKey, paths)] };
  }
  if (code === "not-granted") return { rule: `read path: the Agent declares ${shown}, but the LeviathPolicy does not grant it (not-granted)`, changes: [buildGrantChange(input.syntax, input.agentKey, paths)] };
  return { rule: `read path: ${shown} refused (${text ?? READ_PATH_SOURCE}): it cannot be resolved or checked safely`, changes: [] };
}

const READ_PATH_SOURCE: DecisionSourceName = "read_path";
const WORKDIR_SOURCE: DecisionSourceName = "workdir";

/** A read outside the workspace is what read paths open; a write, or a path that escapes it, nothing does. */
function explainWorkdir(input: ExplainInput, tool: string, recorded: RecordedCode): Explanation {
  if (recorded.code === "outside-workdir" && READ_TOOLS.includes(tool)) return explainReadPath(input, recorded);
  return { rule: `workdir: the path is outside the Run's workspace or escapes it (${recorded.text ?? WORKDIR_SOURCE}); writes stay in the workspace`, changes: [] };
}

function explainUnavailable(input: ExplainInput, tool: string): Explanation {
  const stage = stageOf(input) ?? { name: "?", index: 0 };
  const offered = input.runPolicy?.stages[stage.index]?.availableTools ?? [];
  return { rule: `stage '${stage.name}' does not offer ${tool} (its availableTools: ${offered.join(", ") || "none"})`, changes: [buildAvailableToolsChange(input.syntax, input.agentKey, stage, [...offered, tool])] };
}

function explainAnswered(input: ExplainInput, source: Extract<DecisionSourceName, "user_declined" | "user_denied" | "approval_timed_out" | "gate_timed_out">): Explanation {
  const by = str(input.records.decision["approved_by"]);
  const reason = str(input.records.decision["approval_reason"]);
  const who = by ? ` by ${by}${reason ? ` (reason: ${reason})` : ""}` : "";
  if (source === "user_declined") return { rule: `the prompt was declined${who}`, changes: [], note: "nothing in the policy refused it: answer the next prompt with 'kubectl leviath approve'" };
  if (source === "approval_timed_out" || source === "gate_timed_out") {
    const limit = input.runPolicy?.limits.interactionTimeoutSeconds;
    return { rule: `nobody answered the ${source === "gate_timed_out" ? "taint gate's " : ""}prompt within the interaction timeout${limit === undefined ? "" : ` (${limit} s)`}`, changes: [], note: "nothing in the policy refused it: answer the next prompt with 'kubectl leviath approve' before it expires (spec.limits.interactionTimeoutSeconds of the LeviathPolicy sets how long it waits)" };
  }
  return { rule: `a person denied it at the taint gate${who}`, changes: [], note: "answer the next prompt with 'kubectl leviath approve'" };
}

/** The explanation of each decision source that refuses or asks for something the policy can change or a person answers. */
const EXPLAIN_BY_SOURCE: Partial<Record<DecisionSourceName, (input: ExplainInput, tool: string, recorded: RecordedCode) => Explanation>> = {
  permission_deny: (input, tool) => explainPermission(input, tool, "deny"),
  permission_ask: (input, tool) => explainPermission(input, tool, "ask"),
  auto_block: (input, tool) => explainGate(input, tool),
  read_path: (input, _tool, recorded) => explainReadPath(input, recorded),
  tool_unavailable: (input, tool) => explainUnavailable(input, tool),
  user_declined: (input) => explainAnswered(input, "user_declined"),
  user_denied: (input) => explainAnswered(input, "user_denied"),
  approval_timed_out: (input) => explainAnswered(input, "approval_timed_out"),
  gate_timed_out: (input) => explainAnswered(input, "gate_timed_out"),
  workdir: (input, tool, recorded) => explainWorkdir(input, tool, recorded),
};

/** Explains the call's last decision. */
export function explainCall(input: ExplainInput): Explanation {
  const d = input.records.decision;
  const tool = str(d["tool_name"]) ?? "?";
  const source = parseDecisionSource(d["decision_source"]);
  const text = str(d["code"]);
  const recorded: RecordedCode = { code: parseRefusalCode(text), text };
  const hold = parseHoldReason(d["integrity_hold"]);
  // A held call's refusal, or the prompt it raised (recorded as an ask of its permission).
  if (hold !== undefined && (source === "integrity_held" || source === "permission_ask")) return explainIntegrity(input, tool, hold);
  const explain = source === undefined ? undefined : EXPLAIN_BY_SOURCE[source];
  return explain?.(input, tool, recorded) ?? { rule: `decided by ${str(d["decision_source"]) ?? "?"}${text ? ` (${text})` : ""}`, changes: [] };
}
