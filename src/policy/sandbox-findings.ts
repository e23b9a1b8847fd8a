// What `leviath validate` and the Agent's status say about a blueprint's sandbox blocks: the engine a blueprint
// may not choose, a stage block that silently opts out, and every change the admin's policy makes to what a block
// asks for (a raised kind, a replaced image, network turned off, mounts dropped, another onUnavailable), so a clamp
// is never silent. Pure.
import type { AgentSpec } from "../api/agent.ts";
import type { SandboxBlock } from "../api/common.ts";
import { FINDING_CODE, type Finding, type FindingAdvice } from "../api/findings.ts";
import type { PolicySandbox } from "../api/leviath-policy.ts";
import { rankOf, resolveSandbox, type ResolvedSandbox } from "./sandbox-resolve.ts";

/** The name of a sandbox block where the reader edits it: `[stages.x.sandbox]` in agent.leviath, `spec.stages[0].sandbox` in an Agent. */
function blockName(advice: FindingAdvice, stage: { name: string; index: number } | null): string {
  if (advice.blueprint === "Agent") return stage === null ? "spec.sandbox" : `spec.stages[${stage.index}].sandbox`;
  return stage === null ? "[sandbox]" : `[stages.${stage.name}.sandbox]`;
}

/** Where the admin sets a sandbox field: the LeviathPolicy's `spec.sandbox`, or config.toml's `[sandbox]`. */
function policyField(advice: FindingAdvice, field: "kind" | "image" | "network" | "mounts" | "onUnavailable"): string {
  if (advice.policy === "LeviathPolicy") return `spec.sandbox.${field} of the LeviathPolicy`;
  return `[sandbox] ${field === "onUnavailable" ? "on_unavailable" : field} in your config.toml`;
}

type SandboxField = Parameters<typeof policyField>[1];
/** One clamp a resolved sandbox may show against what its block asked: the finding's code and message, or none. */
type ClampCheck = (block: SandboxBlock, resolved: ResolvedSandbox, where: string) => { code: Finding["code"]; message: string; field: SandboxField } | undefined;

/** Every field the admin's policy may change, in the order the findings are listed. */
const CLAMP_CHECKS: readonly ClampCheck[] = [
  (block, resolved, where) => block.kind !== undefined && rankOf(resolved.kind) > rankOf(block.kind)
    ? { code: FINDING_CODE.sandboxKindClamped, message: `${where} asks kind '${block.kind}'; the admin's floor raises it to '${resolved.kind}'`, field: "kind" }
    : undefined,
  (block, resolved, where) => block.image !== undefined && resolved.image !== block.image
    ? { code: FINDING_CODE.sandboxImageClamped, message: `${where} asks image '${block.image}'; the admin's policy runs '${resolved.image ?? "(none)"}' instead (source ${resolved.source})`, field: "image" }
    : undefined,
  (block, resolved, where) => block.network === true && !resolved.network
    ? { code: FINDING_CODE.sandboxNetworkClamped, message: `${where} asks network = true; the admin's policy turns network off`, field: "network" }
    : undefined,
  (block, resolved, where) => {
    const dropped = (block.mounts ?? []).filter((m) => !resolved.mounts.includes(m));
    if (dropped.length === 0) return undefined;
    return { code: FINDING_CODE.sandboxMountsClamped, message: `${where} mounts ${dropped.join(", ")} ${dropped.length > 1 ? "are" : "is"} dropped: the admin's policy does not offer ${dropped.length > 1 ? "them" : "it"}`, field: "mounts" };
  },
  (block, resolved, where) => block.onUnavailable !== undefined && resolved.onUnavailable !== block.onUnavailable
    ? { code: FINDING_CODE.sandboxOnUnavailableClamped, message: `${where} asks onUnavailable '${block.onUnavailable}'; the admin's policy uses '${resolved.onUnavailable}'`, field: "onUnavailable" }
    : undefined,
];

function clampFindings(block: SandboxBlock, resolved: ResolvedSandbox, at: { where: string; stage: string | null; advice: FindingAdvice }): Finding[] {
  if (resolved.source !== "clamped" && resolved.source !== "policy") return [];
  const { stage } = at;
  return CLAMP_CHECKS.flatMap((check) => {
    const clamp = check(block, resolved, at.where);
    if (clamp === undefined) return [];
    return [{ severity: "note", code: clamp.code, message: clamp.message, fix: `the admin sets it: ${policyField(at.advice, clamp.field)}`, ...(stage !== null ? { stage } : {}) } satisfies Finding];
  });
}

/**
 * The sandbox findings of a blueprint, blocks in order (the Agent's, then each stage's own). Clamps are reported
 * against `policy` (null: no admin config, nothing is clamped); the Agent's block once, when a stage uses it.
 */
export function computeSandboxFindings(spec: AgentSpec, policy: PolicySandbox | undefined | null, advice: FindingAdvice): Finding[] {
  const out: Finding[] = [];
  const engine = (block: SandboxBlock | undefined, stage: string | null, where: string) => {
    if (block?.engine === undefined) return;
    out.push({
      severity: "warning", code: FINDING_CODE.sandboxEngineIgnored,
      message: `${where} engine '${block.engine}' is ignored: a blueprint never chooses the engine; the admin's policy maps sandbox kinds to runtime classes`,
      fix: `remove engine from ${where}`,
      ...(stage !== null ? { stage } : {}),
    });
  };
  const agentWhere = blockName(advice, null);
  engine(spec.sandbox, null, agentWhere);
  const agentBlockUsed = spec.stages.length === 0 || spec.stages.some((s) => s.sandbox === undefined);
  if (spec.sandbox && agentBlockUsed && policy) out.push(...clampFindings(spec.sandbox, resolveSandbox(policy, spec.sandbox, undefined), { where: agentWhere, stage: null, advice }));
  const agentKind = spec.sandbox?.kind ?? "none";
  spec.stages.forEach((stage, index) => {
    const where = blockName(advice, { name: stage.name, index });
    engine(stage.sandbox, stage.name, where);
    if (stage.sandbox && stage.sandbox.kind === undefined && agentKind !== "none") {
      const add = advice.blueprint === "Agent" ? `kind: ${agentKind}` : `kind = "${agentKind}"`;
      out.push({
        severity: "warning", code: FINDING_CODE.sandboxStageOptsOut, stage: stage.name,
        message: `${where} has no kind, so this stage runs without a sandbox unless the admin's floor applies (a stage block replaces the agent's whole)`,
        fix: `add ${add} to ${where}, and repeat the image and network it needs`,
      });
    }
    if (stage.sandbox && policy) out.push(...clampFindings(stage.sandbox, resolveSandbox(policy, undefined, stage.sandbox), { where, stage: stage.name, advice }));
  });
  return out;
}
