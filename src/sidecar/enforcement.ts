// The run policy compiled for enforcement: read-path sets, the gate's overrides, allowlist and CEL rules, and
// the per-tool result labels. Built once per (re)load; a policy that does not compile is never enforced.
import type { RunMode, RunPolicy } from "../api/run-policy.ts";
import { compileRules } from "../policy/cel-rules.ts";
import { BUILTIN_CLASSIFICATIONS, buildResultLabelTable, type ClassificationOverride } from "../policy/classification.ts";
import type { GatePolicy } from "../policy/gate.ts";
import type { Level } from "../policy/levels.ts";
import { buildReadPathPolicy, buildSpawnWarning, isReadPathGrantActive, type ReadPathPolicy } from "../policy/read-paths/index.ts";

/** Everything the sidecar decides with. */
export interface Enforcement {
  readonly runPolicy: RunPolicy;
  /** The run's mode (a standalone `--mode` wins over the file's). */
  readonly mode: RunMode;
  /** Null when the blueprint declares no read paths (the policy is inactive). */
  readonly readPolicy: ReadPathPolicy | null;
  readonly gatePolicy: GatePolicy;
  readonly resultLabels: ReadonlyMap<string, Level>;
  /** Worth logging once per load: the ungranted-declarations warning, rules that did not compile. */
  readonly warnings: readonly string[];
}

/** Where the run's paths are evaluated. */
export interface EnforcementContext {
  /** The canonical workdir. */
  readonly workdir: string;
  /** `~` of read-path entries (LEVIATH_HOME, else the home directory), or undefined. */
  readonly home: string | undefined;
  readonly mode?: RunMode | undefined;
}

function offeredTools(policy: RunPolicy): Set<string> {
  const tools = new Set<string>([...BUILTIN_CLASSIFICATIONS.keys(), ...Object.keys(policy.taint.toolOverrides)]);
  for (const stage of policy.stages) for (const t of [...(stage.availableTools ?? []), ...(stage.requiredTools ?? [])]) tools.add(t);
  return tools;
}

/** Compiles a run policy; an invalid read-path entry or grant is an error naming it. */
export function buildEnforcement(policy: RunPolicy, ctx: EnforcementContext): { ok: true; value: Enforcement } | { ok: false; error: string } {
  const read = buildReadPathPolicy({
    agentName: policy.agent.name,
    declared: policy.readPaths.declared,
    granted: policy.readPaths.granted,
    allowBlueprintReadPaths: policy.readPaths.allowBlueprintReadPaths,
    workdir: ctx.workdir,
    home: ctx.home,
  });
  if (!read.ok) return { ok: false, error: read.error };
  const rules = compileRules(policy.taint.rules.map((r) => ({ name: r.name, source: r.expression })));
  const overrides = new Map<string, ClassificationOverride>(Object.entries(policy.taint.toolOverrides));
  const warnings: string[] = [];
  const spawn = buildSpawnWarning(read.value);
  if (spawn !== null) warnings.push(spawn);
  for (const d of rules.diagnostics) warnings.push(`rule '${d.rule}' never allows (${d.kind}): ${d.message}`);
  return {
    ok: true,
    value: {
      runPolicy: policy,
      mode: ctx.mode ?? policy.launch.mode,
      readPolicy: read.value,
      gatePolicy: { overrides, allowlist: policy.taint.allowlist, rules },
      resultLabels: buildResultLabelTable({
        tools: offeredTools(policy),
        overrides,
        taintTracking: policy.taint.tracking,
        readGrantActive: isReadPathGrantActive(read.value),
      }),
      warnings,
    },
  };
}

/** The index of a stage by name, or -1. */
export function findStageIndex(policy: RunPolicy, name: string): number {
  return policy.stages.findIndex((s) => s.name === name);
}
