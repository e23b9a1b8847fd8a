import type { KubeObject, Pod } from "./kube-types.ts";
import { buildChildNames, type RunRef } from "./names.ts";
import type { PodSettings } from "./pod-settings.ts";
import { buildEnginePod, buildSandboxPod, type WorkspaceMount } from "./pods.ts";
import { buildPoolRunIdentity, listPoolObjectNames } from "./pool-pods.ts";
import { buildNetworkPolicy, buildPolicyConfigMap, buildRole, buildRoleBinding, buildServiceAccount, buildWorkspaceClaim } from "./run-objects.ts";
import type { RunSnapshot } from "./run-snapshot.ts";
import { computeSandboxPlan, type SandboxPlan } from "./sandbox-plan.ts";

/** What the controller decided about the run before building: which sandboxes to keep and where commands may run. */
export interface RunChildrenInput {
  run: RunRef;
  snapshot: RunSnapshot;
  settings: PodSettings;
  /** The sandboxes to run now (not the unavailable ones, not those that fell back to the engine pod). */
  sandboxes: readonly SandboxPlan[];
  /** Commands run in the engine pod for some stage (kind `none`, or a `warn` fallback). */
  hostExec: boolean;
  /** `active`: everything; `finished`: keep the engine pod that ended by itself; `stopped`: no pods at all. */
  lifecycle: "active" | "finished" | "stopped";
  /**
   * Over, but some pod still stops: the sidecar keeps its identity to flush its audit and status, and the
   * NetworkPolicy stays until the last sandbox pod is gone (a dying pod is never let out).
   */
  draining?: boolean;
  /** Active, but the engine pod must wait (a credential Secret is missing). */
  holdEngine?: boolean;
  /**
   * The warm pool pod the Run adopted: it is the engine pod, its claim the workspace and its ServiceAccount the
   * sidecar's, so none of those is built; the Run's Role is bound to that account (buildPoolRunIdentity).
   */
  pool?: string | undefined;
  /** The pool pod's sandbox pods are its own: named after it, scheduled beside it by its `pool-pair` label (docs/controller.md, "Warm sandbox pods"). */
  pairedSandboxes?: boolean | undefined;
}

/** The workspace every pod of the run mounts (an adopted pool pod's claim, for a Run served from a pool). */
export function buildWorkspaceMount(run: RunRef, snapshot: RunSnapshot, pool?: string): WorkspaceMount {
  const ws = snapshot.controller.workspace;
  return {
    claimName: pool !== undefined ? listPoolObjectNames(pool)[1]! : ws.claimName ?? buildChildNames(run.name).workspace,
    mountPath: ws.mountPath,
    sameNode: ws.accessMode === "ReadWriteOnce",
  };
}

/**
 * Every child the run should have right now, in the order they must be written: identity and network policy
 * before the pods they govern, sandbox pods before the engine that execs into them. The ConfigMap comes first.
 */
export function buildRunChildren(input: RunChildrenInput): KubeObject[] {
  const { run, snapshot, settings, pool } = input;
  const agent = snapshot.controller.agent.name;
  const ws = snapshot.controller.workspace;
  const workspace = buildWorkspaceMount(run, snapshot, pool);
  // An adopted pool pod is the engine pod: never built (its spec is the pool's), kept or deleted as the Run's own.
  const engine = pool === undefined ? [buildEnginePod(run, snapshot, workspace, settings)] : [];
  const identity = (execTargets: string[]) => (pool === undefined ? [buildServiceAccount(run, agent), buildRole(run, agent, execTargets), buildRoleBinding(run, agent)] : buildPoolRunIdentity(run, snapshot, pool, execTargets));
  const out: KubeObject[] = [buildPolicyConfigMap(run, snapshot)];
  if (!ws.claimName && pool === undefined) out.push(buildWorkspaceClaim(run, agent, ws));
  if (input.lifecycle !== "active") {
    if (input.draining) {
      out.push(...identity([]));
      if (computeSandboxPlan(run.name, snapshot.runPolicy).some((s) => !s.network)) out.push(buildNetworkPolicy(run, agent));
    }
    if (input.lifecycle === "finished") out.push(...engine);
    return out;
  }
  const execTargets = [...input.sandboxes.map((s) => s.pod), ...(input.hostExec ? [pool ?? buildChildNames(run.name).enginePod] : [])];
  out.push(...identity(execTargets));
  if (input.sandboxes.some((s) => !s.network)) out.push(buildNetworkPolicy(run, agent));
  const pods: Pod[] = input.sandboxes.map((s) => buildSandboxPod(run, agent, s, { mounts: snapshot.controller.sandboxMounts, workspace, settings, pair: input.pairedSandboxes ? pool : undefined }));
  out.push(...pods, ...(input.holdEngine ? [] : engine));
  return out;
}
