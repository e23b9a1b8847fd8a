// The run policy compiled for enforcement: read-path sets, the gate's overrides, allowlist and CEL rules, and
// the per-tool result labels. Built once per (re)load; a policy that does not compile is never enforced.
import type { RunMode, RunPolicy } from "../../api/run-policy.ts";
import { findBuiltinTool } from "../../api/tools.ts";
import { createRequire } from "node:module";
import { compileRulesWith, EMPTY_RULE_SET, type CelLibrary, type CompiledRuleSet, type RuleSource } from "../../policy/cel-rules.ts";
import { BUILTIN_CLASSIFICATIONS, buildResultLabelTable, type ClassificationOverride } from "../../policy/classification.ts";
import type { GatePolicy } from "../../policy/gate.ts";
import type { IntegrityStep } from "../../policy/decide-tool-call.ts";
import { parseAllowlistRule } from "../../policy/allowlist.ts";
import type { Level } from "../../policy/levels.ts";
import { join } from "node:path";
import { findFallThroughStage } from "../../policy/stage-order.ts";
import { buildReadPathPolicy, buildSpawnWarning, computeReadPathFindings, isReadPathGrantActive, resolveRead, type PathFs, type ReadPathPolicy } from "../../policy/read-paths/index.ts";

/** Everything the sidecar decides with. */
export interface Enforcement {
  readonly runPolicy: RunPolicy;
  /** The run's mode (a standalone `--mode` wins over the file's). */
  readonly mode: RunMode;
  /** Null when the blueprint declares no read paths (the policy is inactive). */
  readonly readPolicy: ReadPathPolicy | null;
  readonly gatePolicy: GatePolicy;
  /** The integrity gate's policy (issue 40), its rules compiled. */
  readonly integrityPolicy: IntegrityStep["policy"];
  readonly resultLabels: ReadonlyMap<string, Level>;
  /** The tool names a stage without `available_tools` offers (besides MCP-shaped `server__tool` names). */
  readonly offeredTools: ReadonlySet<string>;
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
  /**
   * The sidecar's own directory and files (audit, state journal, secrets). A policy under which a file tool
   * could reach one of them is refused: the agent would read or rewrite its own audit.
   */
  readonly privatePaths?: { readonly root: string; readonly run: string; readonly files: readonly string[]; readonly fs: PathFs } | undefined;
}

/** Every path the sidecar keeps for a run with `stages` stages, under its root, plus its secret files. */
function listPrivatePaths(p: NonNullable<EnforcementContext["privatePaths"]>, stages: number): string[] {
  const run = join(p.root, p.run);
  const perStage = Array.from({ length: stages }, (_, i) => [join(run, "stages", String(i), "taint_audit.jsonl"), join(run, "stages", String(i), "decisions.jsonl")]);
  return [p.root, run, join(run, "state.jsonl"), ...perStage.flat(), ...p.files];
}

function findReachablePrivatePath(policy: RunPolicy, read: ReadPathPolicy | null, ctx: EnforcementContext): string | undefined {
  const p = ctx.privatePaths;
  if (p === undefined) return undefined;
  const rctx = { workdir: ctx.workdir, policy: read, fs: p.fs };
  for (const path of listPrivatePaths(p, policy.stages.length)) {
    const r = resolveRead(path, rctx);
    if (r.ok && r.decision !== "null_device") return `the sidecar's own file '${path}' would be ${r.decision === "inside_workdir" ? "inside the workdir" : "readable through a granted read path"}: put the audit directory (--audit-dir, LEVIATH_HOME) and the token files outside the workdir and every granted read path`;
  }
  return undefined;
}

/**
 * Every name the run can offer: the built-in tools (but the HTTP tools), and each name the policy itself spells out
 * (classification overrides, stage tool lists, permission maps, `--allow`). Exact spellings only: `Shell` or
 * `submit-output` is none of these, so it is `[unavailable]` rather than an unknown tool the runtime might dispatch
 * as `shell`. The HTTP tools and web_search reach the network from the sidecar's own container: a stage without a
 * tool list offers them only where the blueprint or the policy names them (upstream ships web_fetch and web_search
 * with the agents that use them).
 */
const SIDECAR_OUTBOUND: ReadonlySet<string> = new Set(["http", "search"]);

function offeredTools(policy: RunPolicy): Set<string> {
  const builtins = [...BUILTIN_CLASSIFICATIONS.keys()].filter((name) => !SIDECAR_OUTBOUND.has(findBuiltinTool(name)?.executor ?? "runtime"));
  const tools = new Set<string>([...builtins, ...Object.keys(policy.taint.toolOverrides), ...policy.launch.allow]);
  const maps = [policy.toolPermissions.blueprint, policy.toolPermissions.ceiling, ...policy.stages.map((s) => s.toolPermissions ?? {})];
  for (const map of maps) for (const t of Object.keys(map)) if (t !== "*") tools.add(t);
  for (const stage of policy.stages) for (const t of [...(stage.availableTools ?? []), ...(stage.requiredTools ?? [])]) tools.add(t);
  return tools;
}

/** `@bufbuild/cel`, once a policy with rules needed it. */
let celLibrary: CelLibrary | undefined;

/**
 * The policy's CEL rules compiled. The library (about 27 MiB resident with its generated protobuf model) is loaded
 * on the first policy that has rules, synchronously (a reload is synchronous), so a sidecar without rules never
 * carries it; its CommonJS build is the one `require` loads, and each compiled rule keeps that copy's error test.
 */
function compileRunRules(sources: readonly RuleSource[]): CompiledRuleSet {
  if (sources.length === 0) return EMPTY_RULE_SET;
  celLibrary ??= createRequire(import.meta.url)("@bufbuild/cel") as CelLibrary;
  return compileRulesWith(celLibrary, sources);
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
  const reachable = findReachablePrivatePath(policy, read.value, ctx);
  if (reachable !== undefined) return { ok: false, error: reachable };
  const rules = compileRunRules(policy.taint.rules.map((r) => ({ name: r.name, source: r.expression })));
  const overrides = new Map<string, ClassificationOverride>(Object.entries(policy.taint.toolOverrides));
  const warnings: string[] = [];
  const spawn = buildSpawnWarning(read.value);
  if (spawn !== null) warnings.push(spawn);
  // As upstream's daemon at spawn: the WARN-level lint findings (in practice only broad-read-path).
  for (const f of computeReadPathFindings({ declared: policy.readPaths.declared, report: "offline" })) {
    if (f.severity === "warning") warnings.push(`agent '${policy.agent.name}': ${f.message} [${f.code}]`);
  }
  const integrity = policy.integrity;
  const integrityRules = compileRunRules(integrity.rules.map((r) => ({ name: r.name, source: r.expression })));
  for (const d of [...rules.diagnostics, ...integrityRules.diagnostics]) warnings.push(`rule '${d.rule}' never allows (${d.kind}): ${d.message}`);
  const offered = offeredTools(policy);
  return {
    ok: true,
    value: {
      runPolicy: policy,
      offeredTools: offered,
      mode: ctx.mode ?? policy.launch.mode,
      readPolicy: read.value,
      gatePolicy: { overrides, allowlist: policy.taint.allowlist, rules },
      integrityPolicy: {
        enforce: integrity.enforce, onHold: integrity.onHold, checkTargets: integrity.checkTargets, rules: integrityRules, taintAllowlist: policy.taint.allowlist,
        // The list is about who chose the call, not what it carries: a rule's sensitivity plays no part.
        allowlist: integrity.allowlist.map((r) => parseAllowlistRule({ ...r, max_sensitivity: "private" })),
      },
      resultLabels: buildResultLabelTable({
        tools: offered,
        overrides,
        taintTracking: policy.taint.tracking,
        readGrantActive: isReadPathGrantActive(read.value),
      }),
      warnings,
    },
  };
}

/** The run's current stage under this policy: the session's index, or the last stage when a reload left fewer. */
export function computeCurrentStage(enf: Enforcement, stageIndex: number): { index: number; stage: RunPolicy["stages"][number] } {
  const stages = enf.runPolicy.stages;
  const index = Math.min(stageIndex, stages.length - 1);
  return { index, stage: stages[index]! };
}

/** The index of a stage by name, or -1. */
export function findStageIndex(policy: RunPolicy, name: string): number {
  return policy.stages.findIndex((s) => s.name === name);
}

/**
 * The stages a runtime may move to from stage `index` (`POST /v1/stage`): the targets of its declared transitions,
 * whatever their condition, or, where it declares none (`transitions` absent), the next stage in declaration order.
 */
export function listStageTargets(policy: RunPolicy, index: number): string[] {
  const stage = policy.stages[index];
  if (stage === undefined) return [];
  if (stage.transitions !== undefined) return [...new Set(stage.transitions.map((e) => e.to))];
  const next = findFallThroughStage(policy.stages, index);
  return next === undefined ? [] : [next.name];
}
