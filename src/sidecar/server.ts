// The running sidecar: wires the policy holder, the run's session, the audit files, the approval book and the
// service into the app, listens on loopback, serves metrics on a separate listener (to one bearer token only), reloads the policy, and
// stops cleanly (pending calls refused, records flushed).
import { createServer, type Server } from "node:http";
import { mkdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import type { RunMode, RunPolicy } from "../api/run-policy.ts";
import type { Logger } from "../log/logger.ts";
import { createSidecarMetrics, type SidecarMetrics } from "../metrics/sidecar-metrics.ts";
import { ApprovalBook } from "./core/approvals.ts";
import { buildSidecarApp, computeStatus, type LocalApprovals, type SidecarAppDeps } from "./http/app.ts";
import { createMetricsTokenCheck, METRICS_TOKEN_DIGEST } from "./http/metrics-token.ts";
import { createAuditTee, type AuditLineSink } from "./storage/audit-tee.ts";
import { createAuditWriter } from "./storage/audit-writer.ts";
import { findStageIndex, type Enforcement } from "./core/enforcement.ts";
import { buildResumeRecord } from "./core/resume-audit.ts";
import { PolicyHolder, type ReloadResult } from "./core/policy-holder.ts";
import type { PolicySource } from "./cluster/policy-sources.ts";
import { computeAllowedHosts, type RequestGuard } from "./http/request-guard.ts";
import type { ResultSink } from "./core/run-result.ts";
import { RunSession } from "./core/run-session.ts";
import type { RunStatusSnapshot } from "./core/run-status.ts";
import type { RunStage, ShellExecutor } from "./executors/shell.ts";
import { openStateJournal } from "./storage/state-journal.ts";
import { SeedService } from "./core/seed-service.ts";
import { Ledger } from "./core/ledger.ts";
import { ToolCallService } from "./core/tool-call-service.ts";
import { McpGateway, type StdioLauncher } from "./gateway/mcp-gateway.ts";
import type { VarSource } from "./gateway/server-vars.ts";

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
  /**
   * How stdio MCP servers are started, given the run's current stage (a cluster starts them in its sandbox pod);
   * absent: they cannot be, and their tools are not offered.
   */
  readonly launchStdio?: ((current: () => CurrentStage) => StdioLauncher) | undefined;
  /** Where `${VAR}` in MCP server headers and env come from (default: none, every `${VAR}` fails). */
  readonly gatewayVars?: VarSource;
}

/** A started sidecar. */
export interface RunningSidecar {
  readonly url: string;
  readonly metricsUrl: string | undefined;
  readonly deps: SidecarAppDeps;
  readonly metrics: SidecarMetrics;
  status(): RunStatusSnapshot;
  /** Loads the policy source again now when it changed (a resumed snapshot), as the periodic check would. */
  reloadPolicy(): ReloadResult;
  close(): Promise<void>;
}

function urlOf(address: AddressInfo): string {
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

function startMetricsServer(metrics: SidecarMetrics, at: ListenAddress, allowed: (authorization: string | undefined) => boolean, log: Logger): Promise<Server> {
  const server = createServer((req, res) => {
    // Checked before the path: an unauthenticated client learns nothing, not even which paths exist.
    if (!allowed(req.headers.authorization)) {
      res.writeHead(401, { "www-authenticate": "Bearer", "content-type": "text/plain" }).end("Unauthorized");
      return;
    }
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res.writeHead(404).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(text),
      (err: unknown) => {
        log.error({ err }, "metrics collection failed");
        res.writeHead(500).end();
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(at.port, at.host, () => resolve(server));
  });
}

/** Starts a sidecar; a policy that does not load is an error naming the file and entry. */
export async function startSidecarServer(opts: SidecarServerOptions): Promise<{ ok: true; sidecar: RunningSidecar } | { ok: false; error: string }> {
  const clock = opts.clock ?? Date.now;
  const log = opts.log;
  if (opts.metricsListen && !METRICS_TOKEN_DIGEST.test(opts.metricsTokenSha256 ?? "")) {
    return { ok: false, error: "a metrics listener needs the SHA-256 of its scrape token (--metrics-token-sha256): /metrics is never served unauthenticated" };
  }
  const metrics = createSidecarMetrics();
  // Made first, so the check below sees the real path (a symlinked --audit-dir into the workdir is caught too).
  mkdirSync(join(opts.auditDir, opts.runName), { recursive: true, mode: 0o700 });
  const fs = { realpath: (p: string) => realpathSync.native(p) };
  const privatePaths = { root: realpathSync.native(opts.auditDir), run: opts.runName, files: opts.privateFiles ?? [], fs };
  // Set once the audit exists: a reload onto a resumed snapshot is recorded there (core/resume-audit.ts).
  const after: { reloaded?: (enf: Enforcement) => void; gateway?: McpGateway } = {};
  const opened = PolicyHolder.open(opts.source, { workdir: opts.workdir, home: opts.home, mode: opts.mode, privatePaths }, {
    loaded(enf, warnings, initial) {
      for (const w of warnings) log.warn({ policy: opts.source.description }, w);
      if (!initial) log.info({ policy: opts.source.description, agent: enf.runPolicy.agent.key }, "run policy reloaded");
      if (!initial) after.reloaded?.(enf);
      // Servers the reload adds are connected, dropped ones disconnected (what a stage is offered never widens).
      if (!initial) after.gateway?.update(enf.runPolicy.mcpServers);
      metrics.policyReload(true, Math.floor(clock() / 1000));
    },
    failed(error) {
      log.error({ policy: opts.source.description, error }, "run policy failed to load; keeping the last good one");
      metrics.policyReload(false, Math.floor(clock() / 1000));
    },
  });
  if (!opened.ok) return opened;
  const holder = opened.holder;
  const initial = holder.current().runPolicy;
  const { journal, restored } = openStateJournal(opts.auditDir, opts.runName, opts.syncIntervalMs);
  if (restored.skipped > 0) log.warn({ skipped: restored.skipped }, "state journal had unreadable lines");
  const dropped = restored.dropped ?? { raise: 0, grant: 0 };
  if (dropped.raise + dropped.grant > 0) {
    log.warn({ dropped }, `state journal: dropped ${dropped.grant} grant and ${dropped.raise} raise line(s) that no audited decision made`);
  }
  const session = new RunSession({
    restored, journal, entryStage: Math.max(0, findStageIndex(initial, initial.entryStage)),
    onJournalError: (op) => log.error({ op: op.op }, "could not persist sidecar state"),
  });
  const files = createAuditWriter(opts.auditDir, opts.runName, (err) => log.error({ err }, "audit write failed"), opts.syncIntervalMs);
  const audit = opts.auditOutputs?.length ? createAuditTee(files, opts.runName, opts.auditOutputs) : files;
  let inForce = initial;
  after.reloaded = (enf) => {
    const record = buildResumeRecord(inForce, enf.runPolicy, { timestamp: Math.floor(clock() / 1000), agentId: opts.runName, stage: inForce.stages[session.stageIndex]?.name ?? inForce.entryStage });
    inForce = enf.runPolicy;
    if (record === undefined) return;
    log.info({ resume: record.read_paths_resumed }, "switched to the resumed run's re-resolved read-path grants");
    audit.decision(session.stageIndex, record);
  };
  const approvals = new ApprovalBook(clock, (kind, count) => metrics.pendingApprovals(kind, count));
  const policy = () => holder.current();
  // Always there, empty or not: a reload may add servers. A stdio server starts in the current stage's sandbox,
  // which the service knows: the gateway launches servers only after its first await, once `service` exists.
  const current = (): CurrentStage => ({ runPolicy: holder.current().runPolicy, stage: service.currentStage().stage });
  const gateway = new McpGateway({
    servers: initial.mcpServers, vars: opts.gatewayVars ?? { kind: "env", env: {} }, launchStdio: opts.launchStdio?.(current), log, stageIndex: () => session.stageIndex,
  });
  after.gateway = gateway;
  const shell = opts.shell(policy);
  const ledger = new Ledger({ policy, stageIndex: () => session.stageIndex, audit, metrics, log, clock, monotonicMs: () => performance.now(), runName: opts.runName });
  const service = new ToolCallService({
    gateway, ledger,
    policy, workdir: realpathSync.native(opts.workdir), fs, session, approvals, audit, metrics,
    shell, log, clock, monotonicMs: () => performance.now(), runName: opts.runName,
    ...(opts.result ? { result: opts.result } : {}),
  });
  // Listed once the service exists: a stdio server starts in the current stage's sandbox, which it knows.
  void gateway?.ready();
  metrics.taint(session.context.level(), initial.taint.tracking);
  const guard: RequestGuard = {
    hosts: new Set(), runtimeToken: opts.runtimeToken,
    approvalToken: opts.localApprovals.mode === "token" ? opts.localApprovals.token : undefined,
  };
  const deps: SidecarAppDeps = { service, session, approvals, policy: holder, metrics, log, localApprovals: opts.localApprovals, runName: opts.runName, guard,
    seeds: new SeedService({ workdir: realpathSync.native(opts.workdir), blueprintRoot: opts.blueprintRoot, fs, shell, ledger, metrics, clock, runName: opts.runName, stageIndex: () => session.stageIndex }) };
  const app = buildSidecarApp(deps);
  await app.listen({ host: opts.listen.host, port: opts.listen.port });
  // Until this line every request is refused (no Host is accepted yet).
  for (const h of computeAllowedHosts(opts.listen.host, app.server.address() as AddressInfo)) guard.hosts.add(h);
  const metricsServer = opts.metricsListen ? await startMetricsServer(metrics, opts.metricsListen, createMetricsTokenCheck(opts.metricsTokenSha256!), log) : undefined;
  holder.watch(opts.reloadIntervalMs);
  const url = urlOf(app.server.address() as AddressInfo);
  const metricsUrl = metricsServer ? `${urlOf(metricsServer.address() as AddressInfo)}/metrics` : undefined;
  let closing: Promise<void> | undefined;
  return {
    ok: true,
    sidecar: {
      url, metricsUrl, deps, metrics,
      status: () => computeStatus(deps),
      reloadPolicy: () => holder.check(),
      close() {
        closing ??= (async () => {
          holder.stop();
          service.stop();
          await app.close();
          if (metricsServer) await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
          await gateway.close();
          audit.close();
          journal.close();
        })();
        return closing;
      },
    },
  };
}
