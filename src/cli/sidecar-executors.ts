// The sidecar's executors as `leviath sidecar` chooses them: the shell tool (a channel kept open per sandbox pod,
// pod-channel-shell.ts) and stdio MCP servers in the current stage's sandbox pod (pods/exec) in a cluster, or as confined local processes standalone.
import type { ClusterClient } from "../kube/connect.ts";
import type { createPodExec } from "../kube/pod-exec.ts";
import { probeConfinement, type Confinement } from "../sidecar/executors/local-confinement.ts";
import { createLocalShell } from "../sidecar/executors/local-shell.ts";
import { createLocalStdioLauncher } from "../sidecar/executors/local-stdio-server.ts";
import { createClusterShell, ShellChannels } from "../sidecar/executors/pod-channel-shell.ts";
import { SlotPool } from "../sidecar/executors/pod-exec-sweep.ts";
import { computeStdioTarget, createPodExecStdioLauncher } from "../sidecar/executors/pod-exec-stdio-server.ts";
import { computePodTarget, SANDBOX_CONTAINER } from "../sidecar/executors/sandbox-targets.ts";
import type { CurrentStage, SidecarServerOptions } from "../sidecar/build-sidecar.ts";
import { UsageError, type CliIo } from "./io.ts";

/** Where the sidecar's executors run: the cluster it talks to (if any) and this run's names and confinement. */
export interface ExecutorContext {
  cluster: boolean; client: ClusterClient | undefined; podExec: typeof createPodExec | undefined;
  workdir: string; namespace: string; run: string; confinement: Confinement; execWaitMs: number;
  /** What the sandbox pods are named after: the warm pool pod the run adopted (its sandbox pods are that pod's); undefined, the run. */
  sandboxBase: string | undefined;
  /** The shell channels a pool pod's sidecar opened before its binding (undefined: none, the shell makes its own). */
  channels?: ShellChannels | undefined;
}

/** The shell tool's executor: `--shell` (default pod-exec in a cluster, local standalone), and in a cluster its channels. */
export function shellFactory(shell: string | undefined, io: CliIo, ctx: ExecutorContext): { shell: SidecarServerOptions["shell"]; channels?: ShellChannels } {
  const kind = shell ?? (ctx.cluster ? "pod-exec" : "local");
  if (kind !== "local" && kind !== "pod-exec") throw new UsageError(`--shell '${shell}' is not local or pod-exec`);
  const { client, podExec } = ctx;
  if (kind === "pod-exec") {
    if (client === undefined || podExec === undefined) throw new UsageError("--shell pod-exec needs a cluster (--kubeconfig, or run in a pod)");
    // One channel per sandbox pod (a pool pod's opened before its binding); a call that finds it busy (or a pod
    // that cannot run one) is exec'd.
    const channels = ctx.channels ?? new ShellChannels({ exec: podExec(client, ctx.execWaitMs), namespace: ctx.namespace, slots: new SlotPool() });
    return { channels, shell: (policy) => createClusterShell({ channels, target: (stage) => computePodTarget(ctx.run, policy().runPolicy, stage, ctx.sandboxBase) }) };
  }
  // A command that could outlive its call, see the sidecar or write its audit would undo every guarantee: no
  // confinement, no local shell.
  const why = probeConfinement(ctx.confinement);
  if (why !== undefined) {
    throw new UsageError(`--shell local needs unshare(1) with PID and mount namespaces (and user namespaces when not root) to confine commands: ${why}`);
  }
  return { shell: () => createLocalShell({ workdir: ctx.workdir, env: minimalEnv(io, ctx.workdir), confinement: ctx.confinement }) };
}

/**
 * Opens the shell channel to the current stage's sandbox pod in the background, once the sidecar listens: the first
 * call finds it open (a pool pod's is open already). Never to the engine pod's own agent container (a stage of kind
 * `none`): a channel there is opened by a call, as before, and the runtime beside it never finds one waiting.
 */
export function prepareStageChannel(channels: ShellChannels | undefined, ctx: ExecutorContext, currentStage: () => CurrentStage): void {
  if (channels === undefined) return;
  const current = currentStage();
  const target = computePodTarget(ctx.run, current.runPolicy, current.stage, ctx.sandboxBase);
  if (!("error" in target) && target.container === SANDBOX_CONTAINER) channels.prepare(target);
}

/** Stdio MCP servers: in a cluster in the current stage's sandbox pod (pods/exec), standalone a confined local process. */
export function stdioFactory(io: CliIo, ctx: ExecutorContext): SidecarServerOptions["launchStdio"] {
  const { client, podExec } = ctx;
  if (!ctx.cluster) return () => createLocalStdioLauncher(ctx.confinement, minimalEnv(io, ctx.workdir));
  if (client === undefined || podExec === undefined) return undefined;
  const exec = podExec(client, ctx.execWaitMs);
  return (current) => createPodExecStdioLauncher({ exec, namespace: ctx.namespace, target: () => {
    const { runPolicy, stage } = current();
    return computeStdioTarget(ctx.run, runPolicy, stage, ctx.sandboxBase);
  } });
}

/** Never the sidecar's own environment: local commands and stdio servers get a path, a home and a locale, nothing else. */
function minimalEnv(io: CliIo, workdir: string): Record<string, string> {
  return { PATH: io.env["PATH"] ?? "/usr/bin:/bin", HOME: io.env["HOME"] ?? workdir, LANG: "C.UTF-8", TERM: "dumb", TMPDIR: "/tmp" };
}

