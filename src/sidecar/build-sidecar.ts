// The composition of one sidecar, the only module that knows every folder: each part is built once, after what it
// uses, from the options the CLI parsed. The policy in force (its holder), the run's journal and session, the
// audit, the approval book, the MCP gateway, the executors, the ledger, the core and the seeds, and what the
// front-ends are given. Nothing is bound later: the one cycle (a reload reaches the gateway and the resume record,
// which both read the policy) is a listener the holder is given once they exist. server.ts listens; this never does.
import { mkdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import type { RunMode, RunPolicy } from "../api/run-policy.ts";
import type { Logger } from "../log/logger.ts";
import { createSidecarMetrics, type SidecarMetrics } from "../metrics/sidecar-metrics.ts";
import type { BindingHandout, BindingTake } from "./cluster/binding-handout.ts";
import type { PolicySource } from "./cluster/policy-sources.ts";
import { ApprovalBook } from "./core/approvals.ts";
import { REAL_PATH_FS } from "./real-path-fs.ts";
import type { SidecarTracing } from "./core/call-spans.ts";
import { buildEnforcement, computeCurrentStage, findStageIndex, type Enforcement, type EnforcementContext } from "./core/enforcement.ts";
import { Ledger } from "./core/ledger.ts";
import { PolicyHolder } from "./core/policy-holder.ts";
import { PolicyRollout } from "./core/policy-rollout.ts";
import { buildResumeRecord } from "./core/resume-audit.ts";
import type { ResultSink } from "./core/run-result.ts";
import { RunSession } from "./core/run-session.ts";
import { RuntimeWarnings } from "./core/runtime-warnings.ts";
import { SeedService } from "./core/seed-service.ts";
import { ToolCallService } from "./core/tool-call-service.ts";
import { buildExecutorTable } from "./executors/executor-table.ts";
import type { RunStage, ShellExecutor } from "./executors/shell.ts";
import { McpGateway, type StdioLauncher } from "./gateway/mcp-gateway.ts";
import type { VarSource } from "./gateway/server-vars.ts";
import type { LocalApprovals, SidecarAppDeps } from "./http/app-deps.ts";
import type { RequestGuard } from "./http/request-guard.ts";
import { createAuditTee, type AuditLineSink } from "./storage/audit-tee.ts";
import { createAuditWriter, type AuditSink } from "./storage/audit-writer.ts";
import { openStateJournal, type StateJournal } from "./storage/state-journal.ts";

/** The run policy in force and its current stage. */
export interface CurrentStage {
  readonly runPolicy: RunPolicy;
  readonly stage: RunStage;
}

/** A host and port to listen on (port 0 picks a free one). */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/** Everything a sidecar is started with. */
export interface SidecarServerOptions {
  readonly source: PolicySource;
  /** The canonical workdir. */
  readonly workdir: string;
  readonly home: string | undefined;
  /** Overrides the policy's mode (standalone `--mode`). */
  readonly mode?: RunMode | undefined;
  readonly runName: string;
  readonly listen: ListenAddress;
  readonly metricsListen?: ListenAddress | undefined;
  /** The SHA-256 (hex) of the only bearer token /metrics serves; required with `metricsListen` (fail closed). */
  readonly metricsTokenSha256?: string | undefined;
  /** Root of the audit files and the state journal (`<dir>/<run>/...`). */
  readonly auditDir: string;
  readonly reloadIntervalMs: number;
  /** The shell executor over the policy in force (a pod's target depends on it). */
  readonly shell: (policy: () => Enforcement) => ShellExecutor;
  readonly localApprovals: LocalApprovals;
  /** The runtime's per-start secret: every route but the health check and a prompt's answer needs it. */
  readonly runtimeToken: string;
  /** Secret files outside the audit directory (token files): no read path may reach them either. */
  readonly privateFiles?: readonly string[] | undefined;
  readonly log: Logger;
  readonly clock?: () => number;
  readonly syncIntervalMs?: number;
  /** Where each audit record goes besides the files (stdout, the Run's audit ConfigMaps). */
  readonly auditOutputs?: readonly AuditLineSink[];
  /** The blueprint's own directory (`blueprint:` seeds), canonical: the --agent directory, or --blueprint-dir in a cluster. */
  readonly blueprintRoot?: string | undefined;
  /** Where an allowed `submit_output` is stored (in a cluster: the Run's status and result ConfigMap). */
  readonly result?: ResultSink;
  /** The runtime's warnings an earlier start of this Run's sidecar reported (kept, so a restart does not drop them from the status). */
  readonly runtimeWarnings?: readonly string[];
  /**
   * How stdio MCP servers are started, given the run's current stage (a cluster starts them in its sandbox pod);
   * absent: they cannot be, and their tools are not offered.
   */
  readonly launchStdio?: ((current: () => CurrentStage) => StdioLauncher) | undefined;
  /** Where `${VAR}` in MCP server headers and env come from (default: none, every `${VAR}` fails). */
  readonly gatewayVars?: VarSource;
  /** A bound pool pod's hand-out of its Run's runtime.json and credentials (`POST /v1/binding`); every ask is recorded. */
  readonly binding?: BindingHandout | undefined;
  /**
   * Run once the sidecar is built (its audit open) and before it listens, with the recorded hand-out: a pool pod's
   * unbound server answers the runtime's held ask with it, then gives its port up (cli/sidecar-pool.ts).
   */
  readonly beforeListen?: ((binding: BindingHandout | undefined, log: Logger) => Promise<void>) | undefined;
  /** Each call a span exported over OTLP (`--otlp-traces-endpoint`); absent (the default): no tracer at all. */
  readonly tracing?: SidecarTracing | undefined;
}

/** A built sidecar: what the app is given, and what is started and stopped around it. */
export interface BuiltSidecar {
  readonly deps: SidecarAppDeps;
  readonly metrics: SidecarMetrics;
  readonly holder: PolicyHolder;
  readonly service: ToolCallService;
  readonly gateway: McpGateway;
  readonly audit: AuditSink;
  readonly journal: StateJournal;
  /** The request guard: its hosts are filled once the address is known. */
  readonly guard: RequestGuard;
}

/** The policy in force, its load and reload reported (logs, the reload metric). */
function openPolicy(opts: SidecarServerOptions, metrics: SidecarMetrics, clock: () => number): { ok: true; holder: PolicyHolder; context: EnforcementContext } | { ok: false; error: string } {
  const { log, source } = opts;
  // Made first, so the check below sees the real path (a symlinked --audit-dir into the workdir is caught too).
  mkdirSync(join(opts.auditDir, opts.runName), { recursive: true, mode: 0o700 });
  const fs = { realpath: (p: string) => realpathSync.native(p) };
  const privatePaths = { root: realpathSync.native(opts.auditDir), run: opts.runName, files: opts.privateFiles ?? [], fs };
  const context: EnforcementContext = { workdir: opts.workdir, home: opts.home, mode: opts.mode, privatePaths };
  const opened = PolicyHolder.open(source, context, {
    loaded(enf, warnings, initial) {
      for (const w of warnings) log.warn({ policy: source.description }, w);
      if (!initial) log.info({ policy: source.description, agent: enf.runPolicy.agent.key }, "run policy reloaded");
      metrics.policyReload(true, Math.floor(clock() / 1000));
    },
    failed(error) {
      log.error({ policy: source.description, error }, "run policy failed to load; keeping the last good one");
      metrics.policyReload(false, Math.floor(clock() / 1000));
    },
  });
  return opened.ok ? { ...opened, context } : opened;
}

/**
 * The policy rollout reaching this Run (core/policy-rollout.ts): its snapshots compiled as the policy in force is,
 * a failure logged and counted, and each would-flip counted and recorded in the audit beside the call's decision.
 */
function createRollout(opts: SidecarServerOptions, parts: { compile: (rp: RunPolicy) => ReturnType<typeof buildEnforcement>; metrics: SidecarMetrics; ledger: Ledger; session: RunSession; policy: () => Enforcement; clock: () => number }): PolicyRollout {
  const { log, runName } = opts;
  return new PolicyRollout(parts.compile, {
    changed(role, entry) {
      if (entry) log.info({ role, generation: entry.generation, sha256: entry.sha256, enforcement: entry.enforcement ?? "enforce" }, `policy rollout: the ${role} LeviathPolicy generation ${entry.generation} is now decided beside the pinned policy`);
      else log.info({ role }, `policy rollout: the ${role} snapshot was withdrawn`);
    },
    failed(role, error) {
      log.error({ role, error }, `policy rollout: the ${role} snapshot does not load; the one before stays`);
      parts.metrics.policyRolloutFailure(role);
    },
    flipped(flip, candidate, callId) {
      const mode = candidate.enforcement ?? "audit";
      parts.metrics.policyFlip(mode, flip.now, flip.candidate);
      const runPolicy = parts.policy().runPolicy;
      parts.ledger.record({
        timestamp: Math.floor(parts.clock() / 1000), agent_id: runName, call_id: callId, tool_name: flip.tool,
        stage: runPolicy.stages[parts.session.stageIndex]?.name ?? runPolicy.entryStage, decision: "would_flip", decision_source: "policy_candidate",
        would_flip: { enforcement: mode, policy_generation: candidate.generation, ...(flip.target !== undefined ? { target: flip.target } : {}), now: flip.now, candidate: flip.candidate, differs: flip.differs },
      });
    },
  });
}

/** The run's state, restored from its journal (what it dropped is logged). */
function openSession(opts: SidecarServerOptions, initial: RunPolicy): { journal: StateJournal; session: RunSession } {
  const { log } = opts;
  const { journal, restored } = openStateJournal(opts.auditDir, opts.runName, opts.syncIntervalMs);
  if (restored.skipped > 0) log.warn({ skipped: restored.skipped }, "state journal had unreadable lines");
  const dropped = restored.dropped ?? { raise: 0, grant: 0 };
  if (dropped.raise + dropped.grant > 0) {
    log.warn({ dropped }, `state journal: dropped ${dropped.grant} grant and ${dropped.raise} raise line(s) that no audited decision made`);
  }
  const session = new RunSession({
    restored, journal, entryStage: Math.max(0, findStageIndex(initial, initial.entryStage)), provenance: initial.integrity.provenance,
    onJournalError: (op) => log.error({ op: op.op }, "could not persist sidecar state"),
  });
  return { journal, session };
}

/** Records a reload onto a resumed snapshot in the audit (core/resume-audit.ts), against the policy it replaces. */
function recordResumes(opts: SidecarServerOptions, parts: { holder: PolicyHolder; session: RunSession; ledger: Ledger; clock: () => number }): void {
  let inForce = parts.holder.current().runPolicy;
  parts.holder.onReload((enf) => {
    const stage = inForce.stages[parts.session.stageIndex]?.name ?? inForce.entryStage;
    const record = buildResumeRecord(inForce, enf.runPolicy, { timestamp: Math.floor(parts.clock() / 1000), agentId: opts.runName, stage });
    inForce = enf.runPolicy;
    if (record === undefined) return;
    opts.log.info({ resume: record.read_paths_resumed }, "switched to the resumed run's re-resolved read-path grants");
    parts.ledger.record(record);
  });
}

/**
 * The hand-out with every ask recorded (`tool_name: binding`, decision source `pool_binding`, the refusal's code):
 * an ask whose record cannot be written gets nothing.
 */
function recordBindings(handout: BindingHandout, opts: SidecarServerOptions, parts: { ledger: Ledger; session: RunSession; policy: () => Enforcement; clock: () => number }): BindingHandout {
  let asks = 0;
  return {
    async take(): Promise<BindingTake> {
      const took = await handout.take();
      const runPolicy = parts.policy().runPolicy;
      const stage = runPolicy.stages[parts.session.stageIndex]?.name ?? runPolicy.entryStage;
      const written = parts.ledger.record({
        timestamp: Math.floor(parts.clock() / 1000), agent_id: opts.runName, call_id: `binding-${++asks}`, tool_name: "binding", stage,
        decision: took.ok ? "allow" : "deny", decision_source: "pool_binding", ...(took.ok ? {} : { code: took.code }),
      });
      return written || !took.ok ? took : { ok: false, code: "binding-unavailable", args: ["its audit record could not be written"] };
    },
  };
}

/** Builds a sidecar; a policy that does not load is an error naming the file and entry. */
export function buildSidecar(opts: SidecarServerOptions): { ok: true; sidecar: BuiltSidecar } | { ok: false; error: string } {
  const clock = opts.clock ?? Date.now;
  const monotonicMs = () => performance.now();
  const { log, runName } = opts;
  const metrics = createSidecarMetrics();
  const opened = openPolicy(opts, metrics, clock);
  if (!opened.ok) return opened;
  const holder = opened.holder;
  const compile = (runPolicy: RunPolicy) => buildEnforcement(runPolicy, opened.context);
  const policy = () => holder.current();
  const { journal, session } = openSession(opts, policy().runPolicy);
  const files = createAuditWriter(opts.auditDir, runName, (err) => log.error({ err }, "audit write failed"), opts.syncIntervalMs);
  const audit = opts.auditOutputs?.length ? createAuditTee(files, runName, opts.auditOutputs) : files;
  const spans = opts.tracing?.spans({ taint: () => session.context.level(), agent: () => policy().runPolicy.agent.key, mode: () => policy().mode, clock, monotonicMs });
  const ledger = new Ledger({ policy, stageIndex: () => session.stageIndex, audit, metrics, log, clock, monotonicMs, runName, spans });
  recordResumes(opts, { holder, session, ledger, clock });
  const rollout = createRollout(opts, { compile, metrics, ledger, session, policy, clock });
  const approvals = new ApprovalBook(clock, (kind, count) => metrics.pendingApprovals(kind, count));
  // A stdio server starts in the current stage's sandbox. Always there, empty or not: a reload may add servers.
  const current = (): CurrentStage => ({ runPolicy: policy().runPolicy, stage: computeCurrentStage(policy(), session.stageIndex).stage });
  const gateway = new McpGateway({
    servers: policy().runPolicy.mcpServers, vars: opts.gatewayVars ?? { kind: "env", env: {} }, launchStdio: opts.launchStdio?.(current), log, stageIndex: () => session.stageIndex,
  });
  // Servers a reload adds are connected, dropped ones disconnected (what a stage is offered never widens).
  holder.onReload((enf) => gateway.update(enf.runPolicy.mcpServers));
  holder.onReload((enf) => session.integrity.setLimits(enf.runPolicy.integrity.provenance));
  const shell = opts.shell(policy);
  const executors = buildExecutorTable({ shell, metrics, log, gateway, result: opts.result });
  const workdir = realpathSync.native(opts.workdir);
  const fs = REAL_PATH_FS;
  const service = new ToolCallService({
    policy, workdir, fs, session, approvals, audit, metrics, shell, log, clock, monotonicMs, runName, gateway, ledger, executors, rollout, ...(opts.result ? { result: opts.result } : {}),
  });
  const seeds = new SeedService({ workdir, blueprintRoot: opts.blueprintRoot, fs, shell, ledger, metrics, clock, runName, stageIndex: () => session.stageIndex });
  const guard: RequestGuard = {
    hosts: new Set(), runtimeToken: opts.runtimeToken,
    approvalToken: opts.localApprovals.mode === "token" ? opts.localApprovals.token : undefined,
  };
  const warnings = new RuntimeWarnings();
  warnings.add(opts.runtimeWarnings ?? []);
  const binding = opts.binding === undefined ? undefined : recordBindings(opts.binding, opts, { ledger, session, policy, clock });
  const deps: SidecarAppDeps = { service, session, approvals, policy: holder, metrics, log, localApprovals: opts.localApprovals, runName, guard, seeds, warnings, rollout, ...(binding ? { binding } : {}) };
  return { ok: true, sidecar: { deps, metrics, holder, service, gateway, audit, journal, guard } };
}
