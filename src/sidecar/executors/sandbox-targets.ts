// Which pod and container run a stage's commands in a cluster: the warm sandbox pod of the stage's signature
// (named exactly as the controller names it: after the run, or after the warm pool pod a Run adopted), or the engine
// pod's agent container for a stage of kind `none`.
import type { RunPolicy } from "../../api/run-policy.ts";
import { buildChildNames } from "../../sandbox/names.ts";
import { computeSandboxPlan } from "../../sandbox/sandbox-plan.ts";
import type { PodTarget } from "./pod-exec-shell.ts";
import type { RunStage } from "./shell.ts";

/** The container of a sandbox pod, and of the engine pod's runtime. */
export const SANDBOX_CONTAINER = "sandbox";
/** The engine pod's agent runtime container (stages of kind `none` run there). */
export const AGENT_CONTAINER = "agent";

/** The exec target of a stage of a run; `sandboxBase`: what its sandbox pods are named after (the run, or its pool pod). */
export function computePodTarget(run: string, policy: RunPolicy, stage: RunStage, sandboxBase = run): PodTarget {
  if (stage.sandbox.kind === "none") return { pod: buildChildNames(run).enginePod, container: AGENT_CONTAINER };
  const plan = computeSandboxPlan(sandboxBase, policy).find((p) => p.stages.includes(stage.name));
  if (plan === undefined) return { error: `stage '${stage.name}' has no sandbox pod` };
  if (plan.problem !== undefined) return { error: `the sandbox of stage '${stage.name}' cannot start: ${plan.problem}` };
  return { pod: plan.pod, container: SANDBOX_CONTAINER };
}
