// What a Run's pods wait on that nobody will fix by waiting longer: a pod the scheduler could not place (no node
// fits, a taint, a missing claim) or the Run's own workspace claim not bound to a volume. The Run says it in its
// PodsWaiting condition (present only while True) and Ready's reason, instead of "waiting for pods" until a
// deadline. The scheduler's verdict decides: a pod not tried yet waits as before. Pure.
import { CONDITION, REASON } from "../../api/status.ts";
import type { KubeObject } from "../../kube/objects.ts";
import type { ConditionDecision } from "../conditions.ts";
import type { ObservedPod } from "./run-completion.ts";
import type { PodObject } from "../owned-children.ts";

/** The engine pod's runtime container, whose exit decides the Run's phase. */
const AGENT_CONTAINER = "agent";

/** The longest scheduler message a condition quotes. */
const MAX_SCHEDULER_MESSAGE = 1024;

type PodStatus = NonNullable<PodObject["status"]>;

/** How the agent container ended, if it did. */
function agentExit(s: PodStatus): Pick<ObservedPod, "agent"> {
  const t = s.containerStatuses?.find((c) => c.name === AGENT_CONTAINER)?.state?.terminated;
  if (t?.exitCode === undefined) return {};
  return { agent: { exitCode: t.exitCode, ...(t.reason ? { reason: t.reason } : {}), ...(t.message ? { message: t.message } : {}) } };
}

/** The scheduler's verdict on a pod it could not place, if it gave one. */
function unschedulable(s: PodStatus): Pick<ObservedPod, "unschedulable"> {
  const c = s.conditions?.find((x) => x.type === "PodScheduled" && x.status === "False");
  if (c === undefined) return {};
  return { unschedulable: `${c.reason ?? "Unschedulable"}: ${(c.message ?? "no reason given").slice(0, MAX_SCHEDULER_MESSAGE)}` };
}

/** What the controller sees of one pod (the cache keeps exactly these fields: cached-fields.ts). */
export function observePod(pod: PodObject): ObservedPod {
  const s = pod.status;
  if (s === undefined) return { ready: false };
  return {
    ...(s.phase ? { phase: s.phase } : {}),
    ready: s.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
    ...agentExit(s),
    ...(s.reason ? { reason: s.reason } : {}),
    ...(s.message ? { message: s.message } : {}),
    ...unschedulable(s),
  };
}

type ClaimObject = KubeObject & { spec?: { storageClassName?: string }; status?: { phase?: string } };

function describeClaim(claim: ClaimObject): string {
  const sc = claim.spec?.storageClassName;
  return `claim '${claim.metadata.name}' is ${claim.status?.phase ?? "Pending"}, bound to no volume (storage class ${sc === undefined ? "(the cluster's default)" : `'${sc}'`})`;
}

/**
 * PodsWaiting of a live Run from its pods and the claims it owns; undefined while nothing is stuck. An unbound
 * claim of the Run's is named as the cause when the scheduler could not place a pod; a Lost claim always is.
 */
export function decidePodsWaiting(pods: ReadonlyMap<string, ObservedPod>, owned: readonly KubeObject[]): ConditionDecision | undefined {
  const type = CONDITION.podsWaiting;
  const claims = owned.filter((o): o is ClaimObject => o.kind === "PersistentVolumeClaim") as ClaimObject[];
  const lost = claims.filter((c) => c.status?.phase === "Lost");
  if (lost.length > 0) return { type, status: "True", reason: REASON.claimNotBound, message: lost.map(describeClaim).join("; ") };
  const stuck = [...pods.entries()].filter(([, p]) => p.unschedulable !== undefined && p.phase !== "Succeeded" && p.phase !== "Failed");
  if (stuck.length === 0) return undefined;
  const why = stuck.map(([name, p]) => `pod '${name}' cannot be scheduled (${p.unschedulable})`).join("; ");
  const unbound = claims.filter((c) => c.status?.phase !== "Bound");
  if (unbound.length > 0) return { type, status: "True", reason: REASON.claimNotBound, message: `${unbound.map(describeClaim).join("; ")}; ${why}` };
  return { type, status: "True", reason: REASON.unschedulable, message: why };
}
