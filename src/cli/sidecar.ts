import { mkdirSync, realpathSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_NAMESPACE } from "../api/constants.ts";
import { loadAgent } from "../config/load.ts";
import { componentLogger, createLogger, LOG_LEVELS, type Logger } from "../log/logger.ts";
import { isSafeRunName } from "../sidecar/storage/audit-writer.ts";
import type { Confinement } from "../sidecar/executors/local-confinement.ts";
import { createRunPolicyFileSource, createStandaloneSource, type PolicySource } from "../sidecar/cluster/policy-sources.ts";
import { createResumableSource } from "../sidecar/cluster/resumed-snapshot.ts";
import type { ListenAddress } from "../sidecar/build-sidecar.ts";
import { startSidecarServer } from "../sidecar/server.ts";
import { METRICS_TOKEN_DIGEST } from "../sidecar/http/metrics-token.ts";
import type { VarSource } from "../sidecar/gateway/server-vars.ts";
import { parseCommandArgs, parseListenAddress, parseLogLevel } from "./args.ts";
import { canonicalWorkdir, homeOf } from "./context.ts";
import { EXIT, UsageError, type CliIo } from "./io.ts";
import { applySidecarV8Flags, DEFAULT_EXEC_WAIT_SECONDS, DEFAULT_LISTEN, isLoopbackHost, parseMode, parsePositiveInt, parseRunName, refusePoolOnlyFlags, SIDECAR_OPTIONS } from "./sidecar-options.ts";
import { openClusterRecords, startCluster } from "./sidecar-cluster.ts";
import { prepareStageChannel, shellFactory, stdioFactory, type ExecutorContext } from "./sidecar-executors.ts";
import { prepareApprovals, prepareRuntimeToken } from "./sidecar-secrets.ts";
import type { PoolHandover } from "./sidecar-pool.ts";
import type { ShellChannels } from "../sidecar/executors/pod-channel-shell.ts";
import { DEFAULT_TRACE_CONTENT } from "../sidecar/core/call-span-state.ts";
import { parseTraceFlags, startTracing } from "./sidecar-tracing.ts";

/** `leviath sidecar --help`. */
export const SIDECAR_HELP = `Usage: leviath sidecar --agent FILE [--config FILE] [--policy FILE] [--rules DIR] --workdir DIR [options]
       leviath sidecar --run-policy FILE --workdir DIR --run NAME [options]

The enforcement point for every tool call of an agent runtime: an HTTP API on loopback (docs/sidecar-api.md)
that decides each call (tool permission, then read paths, then the taint gate), executes the file tools and
shell itself, labels results, answers prompts, and writes the audit trail.

Policy (one of):
      --agent FILE          agent.leviath, a directory holding one, or an Agent YAML (standalone)
      --config FILE         the admin's config.toml or a LeviathPolicy YAML (grants, ceilings, limits)
      --policy FILE         policy.toml (taint allowlist and classification overrides), or a LeviathPolicy
                            given instead of --config
                            (each file is told YAML or TOML by content; the files are watched, so not '-')
      --rules DIR           CEL rules, one expression per *.cel file
  -n, --namespace NS        namespace of the agent (grant keys) and of the Run (default: LEVIATH_NAMESPACE,
                            else ${DEFAULT_NAMESPACE})
      --mode MODE           interactive, unattended, yolo or headless (default: interactive, or the run policy's)
      --allow TOOL          turn 'ask' into 'allow' for TOOL (repeatable; never lifts 'deny')
      --run-policy FILE     the resolved run policy (JSON) the controller mounts (cluster)
      --blueprint-dir DIR   with --run-policy: the Agent's blueprint files, the only directory blueprint:
                            seeds read (the controller mounts the copy pinned at start); standalone it is
                            the --agent directory
      --pool                a warm pool's pod (cluster): no run yet; every call is refused 503 not-bound
                            (POST /v1/binding with the runtime token is held up to 20 s) until the
                            controller binds the pod (LEVIATH_POD) to a Run whose snapshot checks out;
                            the Run's sidecar then takes over (docs/controller.md, Warm pools) with the
                            runtime token written at start (--runtime-token-file, required); the held ask
                            is answered once it is built: the Run's runtime.json and credential Secrets,
                            read then with the Run's Role, for the runtime's 'leviath bound-exec'
      --sandbox-pod POD     with --pool: one of the pool pod's own sandbox pods (repeatable; the controller
                            names each): the shell channel to it is opened while the pod waits for its
                            binding, carrying nothing until the bound Run's first shell call there
  Every input is polled (--reload-interval-ms): a change that two polls in a row read the same (never a file
  caught mid-write) takes effect for new calls without a restart, and one that fails to load keeps the last
  good policy (logged, and the metric policy_last_reload_success is 0).

Serving:
      --workdir DIR         the run's workspace (required; it must exist)
      --listen ADDR         the API, loopback only (default ${DEFAULT_LISTEN}; port 0 picks one)
      --metrics-listen ADDR Prometheus /metrics on a separate listener (default: none); needs
                            --metrics-token-sha256
      --metrics-token-sha256 HEX
                            the SHA-256 of the one bearer token /metrics serves ('Authorization: Bearer
                            <token>'; anything else is 401); in a cluster the controller passes the digest of
                            its scrape token (docs/security.md)
      --run NAME            the run: audit agent_id and directory, the Run resource (default: the agent's name)
      --sandbox-pods-of POD the sandbox pods are POD's (<POD>-sbx-<signature>), not the run's: set by a bound
                            warm pool pod's sidecar to its own name (default: the run)
      --audit-dir DIR       audit and state root: DIR/<run>/stages/<n>/taint_audit.jsonl, decisions.jsonl,
                            DIR/<run>/state.jsonl (default: $LEVIATH_HOME/runs, else ~/.leviath/runs)
      --shell KIND          local (a confined process in the workdir: own PID and mount namespaces,
                            read-only root but the workdir and a private /tmp, the audit directory and
                            token files hidden; needs unshare(1)) or pod-exec (the stage's sandbox pod)
                            (default: pod-exec in a cluster, else local)
      --runtime-token-file FILE
                            where the runtime's per-start secret is written (0600; default
                            DIR/<run>/runtime-token): every request but /v1/healthz and a prompt's
                            answer needs 'Authorization: Bearer <it>'
      --approval-token-file FILE
                            standalone: the token that answers prompts (default: a new one written to
                            DIR/<run>/approval-token; its path is printed, never the token)
      --kubeconfig FILE     talk to this cluster (default in a pod: the in-cluster service account)
      --exec-wait-seconds N in a cluster, how long a pods/exec (shell, a stdio MCP server) waits for its
                            sandbox container to be running before it fails naming the pod and container
                            (default ${DEFAULT_EXEC_WAIT_SECONDS}, a Run's default sandboxReadySeconds)
      --mcp-secrets-dir DIR ${"${VAR}"} in an MCP server's headers and env is the file DIR/<secretRef>/VAR of that
                            server's own Secret, never the environment (the controller mounts each Secret
                            there, in the sidecar container only); a missing key keeps the server unoffered,
                            and a stdio server's env takes one only with secretEnvInSandbox (docs/mcp.md).
                            Default: the environment standalone, nothing in a cluster
      --reload-interval-ms N  how often the policy inputs are checked (default 1000)
      --otlp-traces-endpoint URL
                            export one span per tool call ('execute_tool <tool>': the decision, its source,
                            the rule, taint before and after, integrity, stage, Run and Agent) over OTLP/HTTP
                            to URL (one without a path gets OTLP's /v1/traces); a call's W3C traceparent
                            (a /v1 header, MCP's _meta) is continued (docs/tracing.md). Default: none, and
                            no tracer is made
      --trace-content LEVEL none, public, internal or private: a call's arguments are exported when the
                            context's taint before it is at most LEVEL, its result when its label is
                            (default ${DEFAULT_TRACE_CONTENT}); only with --otlp-traces-endpoint
      --log-level LEVEL     ${LOG_LEVELS.join(", ")} (default info); JSON lines on stderr
      --stop-grace-ms N     on SIGTERM, how long to flush the audit, result and status before exiting anyway
                            (default 10000; the engine pod passes its grace period less 2 s)
  -h, --help                show this help

In a cluster (--run-policy with --kubeconfig or KUBERNETES_SERVICE_HOST), prompts are answered with Approval
resources; the stage, taint, decision counts, pending approvals and result are written to the Run's status
(a result over 4096 bytes to the ConfigMap <run>-result); every audit record is also one JSON line on stdout
under the key "leviath_audit" and is kept in the ConfigMaps <run>-audit-NNN until the Run is deleted. A
restart continues those ConfigMaps after the last one and keeps the stored result (it exits 1 when it cannot
read them).
'~' in read-path entries is LEVIATH_HOME when set (even to an empty string), else your home directory.
The audit directory and the token files must be outside the workdir and every granted read path (refused
at start otherwise). Prints the address it listens on and the token files' paths; exits 0 on SIGTERM or
SIGINT, 2 when a flag, a policy file or LEVIATH_SIDECAR_V8_FLAGS (the V8 flags it sets on itself) is invalid.
`;

type Values = ReturnType<typeof parseCommandArgs<typeof SIDECAR_OPTIONS>>["values"];

function defaultAuditDir(io: CliIo): string {
  const leviathHome = io.env["LEVIATH_HOME"];
  if (leviathHome !== undefined && leviathHome !== "") return join(leviathHome, "runs");
  if (io.homedir === undefined) throw new UsageError("no home directory for the audit files; pass --audit-dir DIR");
  return join(io.homedir, ".leviath", "runs");
}

/** Creates the audit root and the run's directory (0700) and returns the root's real path. */
function prepareAuditDir(dir: string, run: string): string {
  try {
    mkdirSync(join(dir, run), { recursive: true, mode: 0o700 });
    return realpathSync.native(dir);
  } catch (err) {
    throw new UsageError(`--audit-dir '${dir}' cannot be created: ${(err as Error).message}`);
  }
}

function defaultRunName(v: Values, io: CliIo, namespace: string): string {
  if (v.run !== undefined) return parseRunName(v.run);
  if (v.agent === undefined) throw new UsageError("--run NAME is required with --run-policy");
  const agent = loadAgent(resolve(io.cwd, v.agent), namespace);
  return agent.ok && isSafeRunName(agent.value.name) ? agent.value.name : "standalone";
}

/** The blueprint's own directory (`blueprint:` seeds): `--blueprint-dir` with --run-policy, else the `--agent` directory or the agent file's. */
function blueprintRootOf(v: Values, io: CliIo): string | undefined {
  const dir = v["blueprint-dir"];
  if (dir !== undefined) {
    if (v["run-policy"] === undefined) throw new UsageError("--blueprint-dir needs --run-policy (standalone, the blueprint directory is the --agent directory)");
    try {
      const real = realpathSync.native(resolve(io.cwd, dir));
      if (!statSync(real).isDirectory()) throw new Error("not a directory");
      return real;
    } catch (err) {
      throw new UsageError(`--blueprint-dir '${dir}': ${(err as Error).message}`);
    }
  }
  if (v.agent === undefined) return undefined;
  const path = resolve(io.cwd, v.agent);
  try {
    return realpathSync.native(statSync(path).isDirectory() ? path : dirname(path));
  } catch {
    return undefined;
  }
}

function policySource(v: Values, io: CliIo, namespace: string): PolicySource {
  const abs = (p: string | undefined) => (p === undefined ? undefined : resolve(io.cwd, p));
  if (v["run-policy"] !== undefined) {
    for (const flag of ["agent", "config", "policy", "rules", "allow"] as const) {
      if (v[flag] !== undefined) throw new UsageError(`--${flag} cannot be used with --run-policy (the run policy is already resolved)`);
    }
    return createRunPolicyFileSource(abs(v["run-policy"])!);
  }
  if (v.agent === undefined) throw new UsageError("--agent FILE (standalone) or --run-policy FILE (cluster) is required");
  return createStandaloneSource({
    agent: abs(v.agent)!, config: abs(v.config), policy: abs(v.policy), rules: abs(v.rules), namespace,
    mode: parseMode(v.mode) ?? "interactive", allow: v.allow ?? [],
  });
}

type Resumable = ReturnType<typeof createResumableSource>;

/** The policy source; in a cluster the run policy may be resumed (status.resume), and then enforces the re-resolved snapshot. */
function policySources(v: Values, io: CliIo, namespace: string, cluster: boolean): { source: PolicySource; resumable: Resumable | undefined } {
  const base = policySource(v, io, namespace);
  if (!cluster || v["run-policy"] === undefined) return { source: base, resumable: undefined };
  const resumable = createResumableSource(base);
  return { source: resumable.source, resumable };
}

/** Resolves after `ms`, saying so: a stop that overruns its grace must not be killed mid-write by SIGKILL. */
function graceTimeout(ms: number): Promise<"timeout"> {
  return new Promise((resolve) => setTimeout(() => resolve("timeout"), ms).unref());
}

function waitForSignal(): Promise<string> {
  // Handlers stay installed: a second signal while stopping must not kill the process before records are flushed.
  return new Promise((done) => {
    process.on("SIGTERM", () => done("SIGTERM"));
    process.on("SIGINT", () => done("SIGINT"));
  });
}

function listenFlags(v: Values): { listen: ListenAddress; metricsListen: ListenAddress | undefined; metricsTokenSha256: string | undefined } {
  const listen = parseListenAddress("--listen", v.listen ?? DEFAULT_LISTEN);
  if (!isLoopbackHost(listen.host)) throw new UsageError(`--listen '${v.listen}' is not a loopback address: the API serves the runtime beside it only`);
  const metricsListen = v["metrics-listen"] === undefined ? undefined : parseListenAddress("--metrics-listen", v["metrics-listen"]);
  const digest = v["metrics-token-sha256"];
  if (digest !== undefined && !METRICS_TOKEN_DIGEST.test(digest)) throw new UsageError(`--metrics-token-sha256: '${digest}' is not a SHA-256 digest (64 lower-case hex digits)`);
  if (metricsListen !== undefined && digest === undefined) throw new UsageError("--metrics-listen needs --metrics-token-sha256 (the digest of the scrape token): /metrics is never served unauthenticated");
  if (metricsListen === undefined && digest !== undefined) throw new UsageError("--metrics-token-sha256 goes with --metrics-listen");
  return { listen, metricsListen, metricsTokenSha256: digest };
}

/** The lines a client waits for: where the API and metrics listen, and where the token files are. */
function announceListening(io: CliIo, sidecar: { url: string; metricsUrl?: string | undefined }, runtimeTokenPath: string, approvalTokenPath: string | undefined): void {
  io.stdout(`leviath sidecar listening on ${sidecar.url}\n`);
  if (sidecar.metricsUrl !== undefined) io.stdout(`metrics on ${sidecar.metricsUrl}\n`);
  // Where the secrets are, never the secrets themselves (stdout may be a file anybody reads).
  io.stdout(`runtime token file: ${runtimeTokenPath}\n`);
  if (approvalTokenPath !== undefined) io.stdout(`approval token file: ${approvalTokenPath}\n`);
}

/**
 * The sidecar's own installation where the private /tmp of a confined command would cover it: this package and
 * the Node.js binary running it, when either lies under /tmp (elsewhere the read-only root already shows them).
 */
function installRootsUnderTmp(): string[] {
  const roots = [resolve(dirname(fileURLToPath(import.meta.url)), "..", ".."), dirname(realpathSync(process.execPath))];
  return [...new Set(roots.map((r) => realpathSync(r)))].filter((r) => r.startsWith("/tmp/"));
}

/** What a pool pod's sidecar hands the Run's sidecar's server: the binding's hand-out, and what runs before it listens. */
const handedOver = (h: PoolHandover | undefined): Partial<Pick<PoolHandover, "binding" | "beforeListen">> => (h === undefined ? {} : { binding: h.binding, beforeListen: h.beforeListen });

/** Where `${VAR}` of MCP servers come from: the mounted Secrets, else the environment (standalone only). */
function gatewayVars(v: Values, io: CliIo, cluster: boolean): VarSource {
  const dir = v["mcp-secrets-dir"];
  if (dir !== undefined) return { kind: "secrets", dir: resolve(io.cwd, dir) };
  // In a cluster the sidecar's environment is the controller's, not the admin's: nothing comes from it.
  return { kind: "env", env: cluster ? {} : io.env };
}

/** Run `leviath sidecar` until SIGTERM or SIGINT. */
export async function runSidecar(argv: string[], io: CliIo, handover?: PoolHandover): Promise<number> {
  const { values: v, positionals } = parseCommandArgs(argv, SIDECAR_OPTIONS);
  if (v.help) {
    io.stdout(SIDECAR_HELP);
    return EXIT.ok;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  if (v.workdir === undefined) throw new UsageError("--workdir DIR is required");
  applySidecarV8Flags(io.env); // before any call is compiled (a pool pod's too): the flags NODE_OPTIONS cannot carry
  if (v.pool) return (await import("./sidecar-pool.ts")).runPoolSidecar(argv, v, io, runSidecar);
  refusePoolOnlyFlags(v);
  const { listen, metricsListen, metricsTokenSha256 } = listenFlags(v);
  const { namespace, cluster } = whereItRuns(v, io);
  const traceFlags = parseTraceFlags(v);
  const workdir = canonicalWorkdir(io, v.workdir);
  const { source, resumable } = policySources(v, io, namespace, cluster);
  const { run, auditDir, approvals, runtime, hidden, confinement } = prepareRunFiles(v, io, { namespace, workdir, cluster, runtimeToken: handover?.runtimeToken });
  const { kube, client, read, channels: opened } = await connectCluster(v, io, cluster, handover);
  const execWaitMs = parsePositiveInt("--exec-wait-seconds", v["exec-wait-seconds"], DEFAULT_EXEC_WAIT_SECONDS) * 1000;
  const executors: ExecutorContext = { cluster, client, podExec: kube?.[1].createPodExec, workdir, namespace, run, sandboxBase: v["sandbox-pods-of"], confinement, execWaitMs, channels: opened };
  const { shell, channels } = shellFactory(v.shell, io, executors);
  const log = componentLogger(createLogger(parseLogLevel(v["log-level"])), "sidecar").child({ run });
  const stopGraceMs = parsePositiveInt("--stop-grace-ms", v["stop-grace-ms"], 10_000);
  const tracing = await startTracing(traceFlags, run, namespace);
  const records = await openClusterRecords(client, { namespace, run, warn: (detail) => log.warn({ detail }, "audit ConfigMap not continued"), read }, io);
  if (records instanceof Error) {
    io.stderr(`leviath sidecar: ${records.message}\n`);
    return EXIT.refused;
  }
  const started = await startSidecarServer({
    ...records?.options,
    source, workdir, home: homeOf(io), mode: parseMode(v.mode), runName: run, listen, metricsListen, metricsTokenSha256,
    auditDir, runtimeToken: runtime.token, privateFiles: hidden.slice(1), blueprintRoot: blueprintRootOf(v, io),
    reloadIntervalMs: parsePositiveInt("--reload-interval-ms", v["reload-interval-ms"], 1000),
    shell, localApprovals: approvals.approvals, log,
    gatewayVars: gatewayVars(v, io, cluster), launchStdio: stdioFactory(io, executors), ...handedOver(handover), tracing,
  }).catch((err: unknown) => ({ ok: false as const, error: `cannot listen on ${v.listen ?? DEFAULT_LISTEN}: ${(err as Error).message}`, status: EXIT.refused }));
  if (!started.ok) {
    io.stderr(`leviath sidecar: ${started.error.split("\n").join("\nleviath sidecar: ")}\n`);
    return "status" in started ? started.status : EXIT.usage;
  }
  const { sidecar } = started;
  prepareStageChannel(channels, executors, sidecar.currentStage);
  // Handlers go in before the address is printed: a client may signal as soon as it reads it.
  const stopped = waitForSignal();
  announceListening(io, sidecar, runtime.path, approvals.path);
  // The watches and reports start once it listens; their modules load only now (a pool pod's, while it waited).
  const stopCluster = kube !== undefined && client !== undefined && records !== undefined ? await import("../sidecar/cluster/cluster-approvals.ts").then(({ startApprovalWatcher }) => startCluster(client, sidecar, records.chunks, { namespace, run, log, resumable, startApprovalWatcher, watchDelayMs: handover?.watchDelayMs })) : async () => {};
  await stopOnSignal(stopped, { stopCluster, sidecar, log, stopGraceMs, auditPending: () => records?.chunks.pending ?? false, channels });
  return EXIT.ok;
}

/** Once a signal comes: the cluster side, then the server, stopped within the grace (past it, the log says what may be missing). */
async function stopOnSignal(stopped: Promise<string>, parts: { stopCluster: () => Promise<void>; sidecar: { close(): Promise<void> }; log: Logger; stopGraceMs: number; auditPending: () => boolean; channels: ShellChannels | undefined }): Promise<void> {
  const { log, stopGraceMs } = parts;
  const signal = await stopped;
  log.info({ signal }, "stopping");
  const stop = (async () => {
    await parts.stopCluster();
    await parts.sidecar.close();
    // The held shell channels last: open, they would keep the process alive until the kubelet's SIGKILL.
    parts.channels?.close();
  })();
  if ((await Promise.race([stop, graceTimeout(stopGraceMs)])) === "timeout") {
    // The kubelet's SIGKILL ends what is still open; the log says what may be missing.
    log.error({ stopGraceMs, auditPending: parts.auditPending() }, "stop overran its grace; exiting with what was flushed");
  }
}

/** The Run's namespace, and whether the sidecar runs against a cluster (a kubeconfig, or a run policy in a pod). */
function whereItRuns(v: Values, io: CliIo): { namespace: string; cluster: boolean } {
  return {
    namespace: v.namespace ?? io.env["LEVIATH_NAMESPACE"] ?? DEFAULT_NAMESPACE,
    cluster: v.kubeconfig !== undefined || (v["run-policy"] !== undefined && io.env["KUBERNETES_SERVICE_HOST"] !== undefined),
  };
}

/**
 * The run's name and its files: the audit directory, the two tokens, and the confinement of local commands, which
 * hides them all (with the MCP servers' Secrets: the sidecar's alone, hidden from commands and every read path).
 */
function prepareRunFiles(v: Values, io: CliIo, at: { namespace: string; workdir: string; cluster: boolean; runtimeToken: PoolHandover["runtimeToken"] | undefined }) {
  const run = defaultRunName(v, io, at.namespace);
  const auditDir = prepareAuditDir(resolve(io.cwd, v["audit-dir"] ?? defaultAuditDir(io)), run);
  const runDir = join(auditDir, run);
  const approvals = prepareApprovals(io, v["approval-token-file"], runDir, at.cluster);
  // A pool pod's runtime already holds the token its pool sidecar wrote: the Run's sidecar keeps it.
  const runtime = at.runtimeToken ?? prepareRuntimeToken(io, v["runtime-token-file"], runDir);
  const secretsDir = v["mcp-secrets-dir"] === undefined ? [] : [resolve(io.cwd, v["mcp-secrets-dir"])].filter((d) => statSync(d, { throwIfNoEntry: false })?.isDirectory() === true);
  const hidden = [auditDir, runtime.path, ...(approvals.path === undefined ? [] : [approvals.path]), ...secretsDir];
  const confinement: Confinement = { base: join(runDir, "shell-root"), workdir: at.workdir, hidden, visible: installRootsUnderTmp() };
  mkdirSync(confinement.base, { recursive: true, mode: 0o700 });
  return { run, auditDir, approvals, runtime, hidden, confinement };
}

/**
 * The cluster parts the sidecar needs before it listens (REST, pods/exec), loaded only in a cluster (a pool pod's
 * sidecar loads them while it waits for its binding; the approval watch's come after the listen). They run on
 * node:https and a WebSocket client, so @kubernetes/client-node (about 55 MiB resident: its generated model) stays
 * out unless the kubeconfig needs one of its plugins (connect.ts decides).
 */
async function connectCluster(v: Values, io: CliIo, cluster: boolean, handover: PoolHandover | undefined) {
  const kube = cluster ? await Promise.all([import("../kube/connect.ts"), import("../kube/pod-exec.ts")]) : undefined;
  // A bound pool pod's sidecar goes on with the client it bound with (same kubeconfig, its connections open).
  const client = kube === undefined ? undefined : handover?.client ?? await kube[0].connectKube(v.kubeconfig ?? io.env["KUBECONFIG"]?.split(":")[0], io.env);
  // And with the Run as its binding's check read it (the records go on from it), and the shell channels it opened.
  return { kube, client, read: handover?.run, channels: handover?.channels };
}
