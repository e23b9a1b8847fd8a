import { TERMINAL_PHASES, type RunStatus } from "../../api/status.ts";
import type { KubeObject } from "../../kube/objects.ts";
import type { ClusterCache } from "../cluster-port.ts";
import type { ControllerDeclaration } from "../controller-declaration.ts";
import { buildObjectKeyOf } from "../object-key.ts";
import { createRunReconciler } from "./run-reconciler.ts";

type RunObject = KubeObject & { spec?: { agentRef?: { name?: string } }; status?: RunStatus };

/** Runs not pinned yet: the only ones an Agent or the policy still changes. */
const unpinnedRuns = (cache: ClusterCache, ns?: string) => (cache.list("run", ns) as RunObject[]).filter((r) => !r.status?.agent);
/** Runs not in a terminal phase. */
const liveRuns = (cache: ClusterCache, ns?: string) => (cache.list("run", ns) as RunObject[]).filter((r) => !TERMINAL_PHASES.includes(r.status?.phase ?? "Pending"));

/** The Run controller: pins, builds and follows every Run. */
export const runController: ControllerDeclaration = {
  name: "run",
  purpose: "pins each Run's Agent and policy, creates and prunes its children, follows its pods and reports its phase and conditions",
  for: { kind: "run", keys: (run) => [buildObjectKeyOf(run)] },
  owns: ["pod", "configMap", "serviceAccount", "role", "roleBinding", "networkPolicy", "pvc"],
  watches: [
    { kind: "agent", keys: (agent, cache) => unpinnedRuns(cache, agent.metadata.namespace).filter((r) => r.spec?.agentRef?.name === agent.metadata.name).map(buildObjectKeyOf) },
    { kind: "policy", keys: (_policy, cache) => unpinnedRuns(cache).map(buildObjectKeyOf) },
    { kind: "runtimeClass", keys: (_rc, cache) => liveRuns(cache).map(buildObjectKeyOf) },
    // A namespace's Pod Security labels are part of its Runs' status (PodSecurityEnforced).
    { kind: "namespace", keys: (ns, cache) => liveRuns(cache, ns.metadata.name).map(buildObjectKeyOf) },
  ],
  signals: { networkEnforcement: (cache) => liveRuns(cache).map(buildObjectKeyOf) },
  reconciler: (ctx) => createRunReconciler(ctx),
};
