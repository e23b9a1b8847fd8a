// What the sidecar tells about its run: the stage, the taint, the decision counts by source and the pending
// approvals (bounded, as the Run's status holds at most 32). Served on `/v1/status` and, in a cluster,
// written to the Run's status.
import type { RunMode } from "../../api/run-policy.ts";
import type { RunResult } from "../../api/status.ts";
import type { Level } from "../../policy/levels.ts";
import type { PendingApproval } from "./approvals.ts";
import type { GatewayServerState } from "./tool-gateway.ts";
import type { FlipTally } from "./policy-rollout.ts";

/** Most pending approvals reported at once (the Run status bound). */
export const MAX_REPORTED_APPROVALS = 32;

/** A snapshot of the run as the sidecar sees it. */
export interface RunStatusSnapshot {
  readonly run: string;
  readonly agent: string;
  readonly mode: RunMode;
  readonly stage: { readonly index: number; readonly name: string };
  readonly taint: { readonly tracking: boolean; readonly level: Level };
  readonly gateDecisions: Readonly<Record<string, number>>;
  readonly pendingApprovals: readonly PendingApproval[];
  /** How many more are pending beyond those listed. */
  readonly pendingApprovalsOmitted: number;
  readonly policy: { readonly ok: boolean; readonly error?: string };
  /** What an allowed `submit_output` handed over (inline, or where it is). */
  readonly result?: RunResult;
  /** The admin's MCP servers (absent when the run has none): offered or not, and why not. */
  readonly mcpServers?: readonly GatewayServerState[];
  /** What the runtime says it does not honour (absent when it said nothing). */
  readonly runtimeWarnings?: readonly string[];
  /** The would-flips of a warn candidate LeviathPolicy (absent: none so far). */
  readonly policyFlips?: FlipTally;
}

/** Inputs of a snapshot. */
export interface StatusInputs {
  readonly run: string;
  readonly agent: string;
  readonly mode: RunMode;
  readonly stage: { readonly index: number; readonly name: string };
  readonly tracking: boolean;
  readonly level: Level;
  readonly counts: ReadonlyMap<string, number>;
  readonly pending: readonly PendingApproval[];
  readonly policyError: string | undefined;
  readonly result?: RunResult | undefined;
  readonly mcpServers?: readonly GatewayServerState[] | undefined;
  readonly runtimeWarnings?: readonly string[] | undefined;
  readonly policyFlips?: FlipTally | undefined;
}

/** Builds the snapshot; decision counts are sorted by source so equal states serialise equally. */
export function buildRunStatusSnapshot(i: StatusInputs): RunStatusSnapshot {
  const counts = Object.fromEntries([...i.counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return {
    run: i.run,
    agent: i.agent,
    mode: i.mode,
    stage: i.stage,
    taint: { tracking: i.tracking, level: i.level },
    gateDecisions: counts,
    pendingApprovals: i.pending.slice(0, MAX_REPORTED_APPROVALS),
    pendingApprovalsOmitted: Math.max(0, i.pending.length - MAX_REPORTED_APPROVALS),
    policy: i.policyError === undefined ? { ok: true } : { ok: false, error: i.policyError },
    ...(i.result !== undefined ? { result: i.result } : {}),
    ...(i.mcpServers !== undefined && i.mcpServers.length > 0 ? { mcpServers: i.mcpServers } : {}),
    ...(i.runtimeWarnings !== undefined && i.runtimeWarnings.length > 0 ? { runtimeWarnings: i.runtimeWarnings } : {}),
    ...(i.policyFlips !== undefined ? { policyFlips: i.policyFlips } : {}),
  };
}
