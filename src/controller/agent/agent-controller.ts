import type { ControllerDeclaration } from "../controller-declaration.ts";
import { buildObjectKeyOf } from "../object-key.ts";
import { createAgentReconciler } from "./agent-reconciler.ts";

/** The Agent controller: each Agent validated against the policy in force. */
export const agentController: ControllerDeclaration = {
  name: "agent",
  purpose: "validates each Agent against the LeviathPolicy in force and reports it on the Agent's status",
  for: { kind: "agent", keys: (agent) => [buildObjectKeyOf(agent)] },
  watches: [
    // Any change of the policy re-evaluates every Agent.
    { kind: "policy", keys: (_policy, cache) => cache.list("agent").map(buildObjectKeyOf) },
  ],
  reconciler: (ctx) => createAgentReconciler({ ...ctx, defaultRuntimeImage: ctx.settings.defaultRuntimeImage }),
};
