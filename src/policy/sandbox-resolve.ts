import type { AgentSpec } from "../api/agent.ts";
import { computeEffectiveStages } from "../api/agent.ts";
import { SANDBOX_KINDS, type SandboxBlock, type SandboxKind } from "../api/common.ts";
import type { PolicySandbox } from "../api/leviath-policy.ts";

/** The sandbox a stage actually gets, after the tighten-only merge. */
export interface ResolvedSandbox {
  kind: SandboxKind;
  image?: string;
  network: boolean;
  mounts: string[];
  persist: boolean;
  onUnavailable: "error" | "warn";
  /** The RuntimeClass the admin maps this kind to; never chosen by a blueprint. */
  runtimeClassName?: string;
  /** Where the result came from, for status and `validate`. */
  source: "blueprint" | "policy" | "clamped" | "default";
}

/** Rank of a kind on the ladder `none < namespace < container < gvisor < microvm`. */
export function rankOf(kind: SandboxKind): number {
  return SANDBOX_KINDS.indexOf(kind);
}

const isActive = (kind: SandboxKind) => kind !== "none";

/** The host default when nothing configures a sandbox: no isolation, network on, fail on unavailable. */
export const HOST_DEFAULT: ResolvedSandbox = { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" };

function fromBlueprint(b: SandboxBlock): ResolvedSandbox {
  // A block with no kind means "none" (upstream's trap, kept: a stage block without kind turns isolation off
  // unless the admin's floor is active). The engine is always dropped.
  return {
    kind: b.kind ?? "none",
    ...(b.image !== undefined ? { image: b.image } : {}),
    network: b.network ?? true,
    mounts: b.mounts ?? [],
    persist: b.persist ?? false,
    onUnavailable: b.onUnavailable ?? "error",
    source: "blueprint",
  };
}

function fromPolicy(p: PolicySandbox): ResolvedSandbox {
  return {
    kind: p.kind ?? "none",
    ...(p.image !== undefined ? { image: p.image } : {}),
    network: p.network ?? true,
    mounts: (p.mounts ?? []).map((m) => m.path),
    persist: p.persist ?? false,
    onUnavailable: p.onUnavailable ?? "error",
    source: "policy",
  };
}

/**
 * Upstream's `resolve(user, agent, stage)` (sandbox spec §1.4) over the extended ladder: the stage block
 * replaces the agent block whole; a blueprint may move the kind up, never down; the admin's image wins;
 * network off wins from either side; mounts are intersected; falling back to the host is the admin's call.
 */
export function resolveSandbox(policy: PolicySandbox | undefined, agent: SandboxBlock | undefined, stage: SandboxBlock | undefined): ResolvedSandbox {
  const chosen = stage ?? agent;
  const user = policy ? fromPolicy(policy) : undefined;
  let out: ResolvedSandbox;
  if (chosen) {
    const bp = fromBlueprint(chosen);
    if (user && isActive(user.kind)) {
      out = !isActive(bp.kind)
        ? user
        : {
            kind: rankOf(bp.kind) >= rankOf(user.kind) ? bp.kind : user.kind,
            ...(user.image ?? bp.image ? { image: (user.image ?? bp.image) as string } : {}),
            network: bp.network && user.network,
            mounts: bp.mounts.filter((m) => user.mounts.includes(m)),
            persist: bp.persist,
            onUnavailable: user.onUnavailable,
            source: "clamped",
          };
    } else out = bp;
  } else out = user ?? HOST_DEFAULT;
  const runtimeClassName = runtimeClassFor(out.kind, policy);
  return runtimeClassName ? { ...out, runtimeClassName } : out;
}

function runtimeClassFor(kind: SandboxKind, policy: PolicySandbox | undefined): string | undefined {
  const classes = policy?.runtimeClasses;
  if (kind === "gvisor") return classes?.gvisor;
  if (kind === "microvm") return classes?.microvm;
  if (kind === "container" || kind === "namespace") return classes?.container || undefined;
  return undefined;
}

/** The resolved sandbox of every effective stage, in order. */
export function resolveStageSandboxes(spec: AgentSpec, policy: PolicySandbox | undefined): { stage: string; sandbox: ResolvedSandbox }[] {
  return computeEffectiveStages(spec).map((s) => ({ stage: s.name, sandbox: resolveSandbox(policy, spec.sandbox, s.sandbox) }));
}

/** Effective taint tracking: the admin's switch OR the blueprint's agent-level block (on only; stage blocks ignored). */
export function resolveTaintTracking(spec: AgentSpec, globalSwitch: boolean): boolean {
  const bp = spec.security === undefined ? false : (spec.security.taintTracking ?? true);
  return globalSwitch || bp;
}
