// The sidecar's Prometheus metrics, on their own registry (served on a separate listener). Every label value
// comes from a closed union: never a path, a tool name, a run name or a rule name.
import { Counter, Gauge, Histogram, Registry } from "./prom-core.ts";
import type { RunMode } from "../api/run-policy.ts";
import { CALL_DECISION_SOURCES, type CallDecisionSource } from "../api/decision-sources.ts";
import type { DecisionClass } from "../policy/policy-flips.ts";
import type { RolloutRole } from "../sandbox/rollout-snapshot.ts";
import { levelRank, type Level } from "../policy/levels.ts";
import { registerBuildInfo } from "./build-info-gauge.ts";

/** What the sidecar answered for a call. */
export const DECISIONS = ["allow", "deny", "ask"] as const;
/** A decision label value. */
export type DecisionLabel = (typeof DECISIONS)[number];

/** Why: the decision sources of a call (the taint gate's and the sidecar's own steps), from their table. */
export const DECISION_SOURCES: readonly CallDecisionSource[] = CALL_DECISION_SOURCES;
/** A decision-source label value. */
export type DecisionSourceLabel = CallDecisionSource;

/** Tool classes as label values: the file tools and shell by name, every other tool by its direction. */
export const TOOL_CLASSES = ["file_read", "file_write", "shell", "outbound", "inbound", "internal"] as const;
/** A tool-class label value. */
export type ToolClassLabel = (typeof TOOL_CLASSES)[number];

/** Kinds of prompt a pending approval answers. */
export const APPROVAL_KINDS = ["taint_gate", "tool_approval"] as const;
/** A prompt kind. */
export type ApprovalKind = (typeof APPROVAL_KINDS)[number];

/** How a prompt ended. */
export type ApprovalOutcome = "allowed" | "denied" | "expired";

/** Where a shell command ran, and how it ended. */
export type ShellExecutorLabel = "local" | "pod_exec";
/** How a shell command ended. */
export type ShellOutcome = "exited" | "timed_out" | "capped" | "failed";

/** How a call of an HTTP tool ended (sidecar/executors/http-tools.ts). */
export type HttpToolOutcomeLabel = "ok" | "http_error" | "truncated" | "oversized" | "not_text" | "redirect_refused" | "timed_out" | "failed" | "local_refused";

/** The seed forms the sidecar fills (`POST /v1/seeds`). */
export const SEED_FORMS = ["files", "glob", "rhai", "command"] as const;
/** A seed form, as a label. */
export type SeedFormLabel = (typeof SEED_FORMS)[number];
/** How a seed resolution ended: filled, refused by a check (the fence, the policy), or failed (unreadable, non-zero exit). */
export type SeedOutcomeLabel = "filled" | "refused" | "failed";

/** Why the integrity gate held a call (issue 40), as label values. */
export const INTEGRITY_HOLD_REASONS = ["untrusted_target", "untrusted_context", "unlisted_target"] as const;
/** A hold reason label value. */
export type IntegrityHoldReasonLabel = (typeof INTEGRITY_HOLD_REASONS)[number];
/** What became of a held call: refused, asked, let through by the untrusted-context allowlist or an integrity rule, or waived (yolo). */
export const INTEGRITY_HOLD_OUTCOMES = ["refused", "asked", "allowlist", "rule", "waived"] as const;
/** A hold outcome label value. */
export type IntegrityHoldOutcomeLabel = (typeof INTEGRITY_HOLD_OUTCOMES)[number];

/** One decision, as counted. */
export interface DecisionLabels {
  decision: DecisionLabel;
  source: DecisionSourceLabel;
  toolClass: ToolClassLabel;
  mode: RunMode;
}

/** The sidecar's metrics. */
export interface SidecarMetrics {
  readonly registry: Registry;
  /** Counts a decision; `seconds` (when given) is how long deciding took. */
  decision(labels: DecisionLabels, seconds?: number): void;
  taint(level: Level, tracking: boolean): void;
  pendingApprovals(kind: ApprovalKind, count: number): void;
  approvalAnswered(kind: ApprovalKind, outcome: ApprovalOutcome, seconds: number): void;
  policyReload(ok: boolean, unixSeconds: number): void;
  auditWriteError(): void;
  shell(executor: ShellExecutorLabel, outcome: ShellOutcome): void;
  /** Counts a call the MCP gateway carried, by the server's policy name (a closed set: the admin's list). */
  mcpCall(server: string, outcome: "ok" | "error"): void;
  /** Counts one request of an HTTP tool the sidecar ran (web_fetch, http_get, http_post), by how it ended. */
  httpTool(tool: string, outcome: HttpToolOutcomeLabel): void;
  /** Counts one seed resolution. */
  seed(form: SeedFormLabel, outcome: SeedOutcomeLabel): void;
  /** Counts a call the integrity gate held, by why, what became of it, and the tool's class. */
  integrityHold(reason: IntegrityHoldReasonLabel, outcome: IntegrityHoldOutcomeLabel, toolClass: ToolClassLabel): void;
  /** Counts a would-flip: a call a warn or audit candidate would decide otherwise (docs/operations.md, Rolling out a policy). */
  policyFlip(mode: "warn" | "audit", from: DecisionClass, to: DecisionClass): void;
  /** Counts a policy rollout snapshot that did not parse or compile (the one before stays), by role. */
  policyRolloutFailure(role: RolloutRole): void;
}

const LATENCY_BUCKETS = [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1];
const WAIT_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200];

/**
 * Creates the registry and every metric. prom-client's default Node metrics are left out: three of them are
 * gauges named `*_total`, which `promtool check metrics` rejects, and the kubelet reports the container's CPU
 * and memory anyway.
 */
export function createSidecarMetrics(): SidecarMetrics {
  const registry = new Registry();
  const registers = [registry];
  const decisions = new Counter({
    name: "leviath_sidecar_decisions_total",
    help: "Tool-call decisions by decision (allow, deny, ask), decision source, tool class and run mode",
    labelNames: ["decision", "source", "tool_class", "mode"], registers,
  });
  const latency = new Histogram({
    name: "leviath_sidecar_decision_duration_seconds",
    help: "Time to decide a tool call (permission, read paths, taint gate), excluding execution and approval waits",
    labelNames: ["tool_class"], buckets: LATENCY_BUCKETS, registers,
  });
  const taint = new Gauge({ name: "leviath_sidecar_context_taint_level", help: "Current context taint level: 0 public, 1 internal, 2 private", registers });
  const tracking = new Gauge({ name: "leviath_sidecar_taint_tracking_enabled", help: "1 when taint tracking is on for this run", registers });
  const pending = new Gauge({ name: "leviath_sidecar_pending_approvals", help: "Prompts waiting for an answer, by prompt kind (taint_gate, tool_approval)", labelNames: ["prompt"], registers });
  const wait = new Histogram({
    name: "leviath_sidecar_approval_wait_seconds",
    help: "Time from raising a prompt to its answer or expiry, by prompt kind and outcome",
    labelNames: ["prompt", "outcome"], buckets: WAIT_BUCKETS, registers,
  });
  const reloads = new Counter({ name: "leviath_sidecar_policy_reloads_total", help: "Run-policy loads by result (success, failure)", labelNames: ["result"], registers });
  const lastOk = new Gauge({ name: "leviath_sidecar_policy_last_reload_success", help: "1 when the last run-policy load succeeded, 0 when the last good policy is still in force", registers });
  const lastAt = new Gauge({ name: "leviath_sidecar_policy_last_reload_timestamp_seconds", help: "Unix time of the last run-policy load attempt", registers });
  const flips = new Counter({
    name: "leviath_sidecar_policy_flips_total", registers, labelNames: ["mode", "from", "to"],
    help: "Calls a warn or audit candidate LeviathPolicy would decide otherwise, by the candidate's mode and the decision now (from) and under the candidate (to): allow, ask, deny",
  });
  const rolloutFailures = new Counter({ name: "leviath_sidecar_policy_rollout_failures_total", help: "Policy rollout snapshots (enforced, candidate) that did not parse or compile; the one before stays", labelNames: ["role"], registers });
  const auditErrors = new Counter({ name: "leviath_sidecar_audit_write_errors_total", help: "Audit records that could not be written (the call was refused)", registers });
  const shell = new Counter({ name: "leviath_sidecar_shell_commands_total", help: "Shell commands run, by executor and outcome", labelNames: ["executor", "outcome"], registers });
  const mcpCalls = new Counter({ name: "leviath_sidecar_mcp_gateway_calls_total", help: "Calls carried to the admin's MCP servers after every check allowed them, by server (its LeviathPolicy name) and outcome (ok, error)", labelNames: ["server", "outcome"], registers });
  const httpTools = new Counter({
    name: "leviath_sidecar_http_tool_calls_total", registers, labelNames: ["tool", "outcome"],
    help: "Calls of web_fetch, http_get and http_post the sidecar ran after every check allowed them, by tool and outcome (ok, http_error, truncated, oversized, not_text, redirect_refused, timed_out, failed, local_refused)",
  });
  const seeds = new Counter({ name: "leviath_sidecar_seeds_total", help: "Seed resolutions (POST /v1/seeds) by form (files, glob, rhai, command) and outcome (filled, refused, failed)", labelNames: ["form", "outcome"], registers });
  const holds = new Counter({
    name: "leviath_sidecar_integrity_holds_total", registers, labelNames: ["reason", "outcome", "tool_class"],
    help: "Acting calls the integrity gate held, by reason (untrusted_target, untrusted_context, unlisted_target), outcome (refused, asked, allowlist, rule, waived) and tool class",
  });
  registerBuildInfo(registry, "leviath_build_info", "The running build of the Leviath sidecar: version and Node.js version labels, value 1");
  for (const prompt of APPROVAL_KINDS) pending.set({ prompt }, 0);
  return {
    registry,
    decision(l, seconds) {
      decisions.inc({ decision: l.decision, source: l.source, tool_class: l.toolClass, mode: l.mode });
      if (seconds !== undefined) latency.observe({ tool_class: l.toolClass }, seconds);
    },
    taint(level, on) {
      taint.set(levelRank(level));
      tracking.set(on ? 1 : 0);
    },
    pendingApprovals: (prompt, count) => pending.set({ prompt }, count),
    approvalAnswered: (prompt, outcome, seconds) => wait.observe({ prompt, outcome }, seconds),
    policyFlip(mode, from, to) {
      flips.inc({ mode, from, to });
    },
    policyRolloutFailure(role) {
      rolloutFailures.inc({ role });
    },
    policyReload(ok, unixSeconds) {
      reloads.inc({ result: ok ? "success" : "failure" });
      lastOk.set(ok ? 1 : 0);
      lastAt.set(unixSeconds);
    },
    auditWriteError: () => auditErrors.inc(),
    shell: (executor, outcome) => shell.inc({ executor, outcome }),
    mcpCall: (server, outcome) => mcpCalls.inc({ server, outcome }),
    httpTool: (tool, outcome) => httpTools.inc({ tool, outcome }),
    seed: (form, outcome) => seeds.inc({ form, outcome }),
    integrityHold: (reason, outcome, toolClass) => holds.inc({ reason, outcome, tool_class: toolClass }),
  };
}
