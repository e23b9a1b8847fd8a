import type { ControllerDeclaration } from "../controller-declaration.ts";
import { buildObjectKeyOf } from "../object-key.ts";
import { createPoolReconciler } from "./pool-reconciler.ts";

/** The pool controller: keeps each LeviathPolicy pool's ready, unbound engine pods (docs/controller.md, Warm pools). */
export const poolController: ControllerDeclaration = {
  name: "pool",
  purpose: "keeps the ready, unbound engine pods of each Agent a LeviathPolicy pool names, and retires stale ones",
  for: { kind: "agent", keys: (agent) => [buildObjectKeyOf(agent)] },
  // Pool pods (engine and sandbox), their identity, claims and NetworkPolicy are owned by their Agent until a Run adopts them.
  owns: ["pod", "serviceAccount", "role", "roleBinding", "pvc", "networkPolicy"],
  // A pool added, resized or removed, or a change of what a Run would pin (image ceiling, read-path grants).
  watches: [{ kind: "policy", keys: (_policy, cache) => cache.list("agent").map(buildObjectKeyOf) }],
  reconciler: (ctx) => createPoolReconciler(ctx),
};
