import { API_VERSION, KIND } from "../../api/constants.ts";
import type { EventSink } from "../../kube/event-recorder.ts";
import type { AgentStatus } from "../../api/status.ts";
import { computeAgentStatus } from "./agent-status.ts";
import type { ClusterCache, ClusterWriter, ReconcileResult } from "../cluster-port.ts";
import { isSameStatus } from "../conditions.ts";
import { parseObjectKey } from "../object-key.ts";
import type { PolicyState } from "../leviath-policy/policy-state.ts";
import { createTransitionRecorder, VALIDATE_ACTION } from "../status-events.ts";

/** What the Agent reconciler needs. */
export interface AgentReconcilerDeps {
  cache: ClusterCache;
  writer: ClusterWriter;
  policy: () => PolicyState;
  nowIso: () => string;
  /** The controller's runtime image (`--runtime-image`), always allowed by the policy's image ceiling. */
  defaultRuntimeImage?: string | undefined;
  /** Where the Events of status transitions go (none: not recorded). */
  events?: EventSink;
}

type AgentObject = { spec?: unknown; status?: AgentStatus; metadata: { generation?: number; uid?: string } };

/** Reconcile one Agent: validate it against the current policy and write the status when it changed. */
export function createAgentReconciler(deps: AgentReconcilerDeps): (key: string) => Promise<ReconcileResult> {
  const recordTransitions = createTransitionRecorder(deps.events);
  return async (key) => {
    const { namespace, name } = parseObjectKey(key);
    if (namespace === undefined) return {};
    const obj = deps.cache.get("agent", namespace, name) as (AgentObject & { metadata: { name: string } }) | undefined;
    if (!obj) return {};
    const status = computeAgentStatus({
      namespace,
      name,
      generation: obj.metadata.generation ?? 0,
      spec: structuredClone(obj.spec),
      policy: deps.policy(),
      previous: obj.status,
      now: deps.nowIso(),
      ...(deps.defaultRuntimeImage ? { defaultRuntimeImage: deps.defaultRuntimeImage } : {}),
    });
    if (isSameStatus(obj.status, status)) return {};
    await deps.writer.applyStatus("agent", namespace, name, status);
    const regarding = { apiVersion: API_VERSION, kind: KIND.agent, name, namespace, ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}) };
    recordTransitions(regarding, obj.status?.conditions, status.conditions, VALIDATE_ACTION);
    return {};
  };
}
