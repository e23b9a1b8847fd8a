// A warm pool's sandbox pods (docs/controller.md, "Warm sandbox pods"): each pool engine pod gets, before any Run
// exists, the sandbox pods a Run of its Agent would plan, one per signature, named after it and mounting its
// workspace claim, so that a Run that adopts the engine pod adopts them with it. A sandbox pod holds nothing of any
// Run (no credential, no token, no task: an image sleeping until the sidecar execs into it); its spec is exactly the
// one the Run controller builds for a Run bound to that engine pod, compared by the spec hash.
import { LABEL } from "../api/constants.ts";
import type { KubeObject, Pod } from "./kube-types.ts";
import { ANNOTATION, buildLabelValue, COMPONENT, NETWORK_NONE } from "./names.ts";
import type { PodSettings } from "./pod-settings.ts";
import { buildSandboxPod } from "./pods.ts";
import { buildPoolMeta, listPoolObjectNames, POOL_STATE, POOL_WORKSPACE, type PoolAgent, type PoolTemplate } from "./pool-pods.ts";
import { computeSandboxPlan, type SandboxPlan } from "./sandbox-plan.ts";

/**
 * The sandbox pods a Run bound to pool pod `pod` plans, as the pool makes them: every signature of the template's
 * stages that can start (an image, a runtime class the cluster has). One it cannot make is made cold by the Run.
 */
export function listPoolSandboxPlans(template: PoolTemplate, pod: string, hasRuntimeClass: (name: string) => boolean): SandboxPlan[] {
  if (template.sandboxes === undefined) return [];
  return computeSandboxPlan(pod, template.sandboxes.runPolicy).filter((p) => p.problem === undefined && (p.runtimeClassName === undefined || hasRuntimeClass(p.runtimeClassName)));
}

/**
 * One sandbox pod of pool pod `pod`: the spec {@link buildSandboxPod} gives a Run bound to that pod (its claim, the
 * pool workspace's path, scheduled beside it by its `pool-pair` label), with the pool's metadata: owned by the
 * Agent, `pool-state: ready`, paired with `pod` (label and exact-name annotation), its signature and, for
 * `network = false`, `network: none`, which the pool's NetworkPolicy selects from the start.
 */
export function buildPoolSandboxPod(template: PoolTemplate, pod: string, plan: SandboxPlan, settings: PodSettings): Pod {
  const { agent } = template;
  const workspace = { claimName: listPoolObjectNames(pod)[1]!, mountPath: POOL_WORKSPACE.mountPath, sameNode: true };
  const spec = buildSandboxPod({ name: pod, namespace: agent.namespace, uid: "" }, agent.name, plan, { mounts: template.sandboxes?.mounts ?? [], workspace, settings, pair: pod });
  const meta = buildPoolMeta(agent, plan.pod, COMPONENT.sandbox);
  meta.labels = {
    ...meta.labels,
    [LABEL.poolState]: POOL_STATE.ready,
    [LABEL.poolPair]: buildLabelValue(pod),
    [LABEL.sandboxSignature]: plan.signature,
    ...(plan.network ? {} : { [LABEL.network]: NETWORK_NONE }),
  };
  meta.annotations = { [ANNOTATION.specHash]: spec.metadata.annotations?.[ANNOTATION.specHash] ?? "", [ANNOTATION.poolPair]: pod };
  return { ...spec, metadata: meta };
}

/** The name of a pool's NetworkPolicy. */
function buildPoolNetworkPolicyName(agent: string): string {
  return `${agent.slice(0, 253 - 13)}-pool-isolate`;
}

/**
 * `network = false` for a pool's sandbox pods: deny all ingress and egress of every pod of the pool labelled
 * `network: none`, from its creation on. An adopted pod keeps its `pool` label, so this policy still selects it
 * while the Run's own NetworkPolicy (which selects it by the `run` label it gets) comes into force: no moment
 * without one. Owned by the Agent; kept while the Agent lives (it selects nothing once no such pod is left).
 */
export function buildPoolNetworkPolicy(agent: PoolAgent): KubeObject {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: buildPoolMeta(agent, buildPoolNetworkPolicyName(agent.name), COMPONENT.network),
    spec: {
      podSelector: { matchLabels: { [LABEL.pool]: buildLabelValue(agent.name), [LABEL.network]: NETWORK_NONE } },
      policyTypes: ["Ingress", "Egress"],
    },
  };
}
