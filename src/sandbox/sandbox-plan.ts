import { SANDBOX_KINDS, type SandboxKind } from "../api/common.ts";
import type { RunPolicy } from "../api/run-policy.ts";
import { computeHash } from "./hash.ts";
import { buildSandboxPodName } from "./names.ts";

/** One warm sandbox pod: a distinct signature and the stages that share it. */
export interface SandboxPlan {
  signature: string;
  pod: string;
  /** The strongest kind among its stages (kinds with the same runtime class share a pod). */
  kind: SandboxKind;
  image?: string;
  network: boolean;
  mounts: string[];
  runtimeClassName?: string;
  stages: string[];
  /** `error` if any of its stages says so: the stricter answer wins. */
  onUnavailable: "error" | "warn";
  /** Why this sandbox can never start, known before any pod exists (upstream's spawn-time reasons). */
  problem?: string;
}

/**
 * The distinct sandboxes of a run, in stage order: one per signature (image, network, mounts, runtime class),
 * as upstream keeps one warm container per configuration. Stages of kind `none` run in the engine pod.
 */
export function computeSandboxPlan(runName: string, policy: RunPolicy): SandboxPlan[] {
  const plans = new Map<string, SandboxPlan>();
  for (const stage of policy.stages) {
    const s = stage.sandbox;
    if (s.kind === "none") continue;
    const signature = computeHash({ image: s.image ?? null, network: s.network, mounts: s.mounts, runtimeClassName: s.runtimeClassName ?? null });
    const existing = plans.get(signature);
    if (existing) {
      existing.stages.push(stage.name);
      if (SANDBOX_KINDS.indexOf(s.kind) > SANDBOX_KINDS.indexOf(existing.kind)) existing.kind = s.kind;
      if (s.onUnavailable === "error") existing.onUnavailable = "error";
      continue;
    }
    plans.set(signature, {
      signature,
      pod: buildSandboxPodName(runName, signature),
      kind: s.kind,
      ...(s.image !== undefined ? { image: s.image } : {}),
      network: s.network,
      mounts: s.mounts,
      ...(s.runtimeClassName !== undefined ? { runtimeClassName: s.runtimeClassName } : {}),
      stages: [stage.name],
      onUnavailable: s.onUnavailable,
      ...(s.image === undefined ? { problem: "container sandbox requires an `image`" } : {}),
    });
  }
  return [...plans.values()];
}

/** Whether any stage runs in the engine pod itself (kind `none`). */
export function hasHostStages(policy: RunPolicy): boolean {
  return policy.stages.some((s) => s.sandbox.kind === "none");
}
