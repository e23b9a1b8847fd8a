// Spawn-time construction of an agent's read-path policy (spec §3.6, §6).
import { compileReadPathSet, type CompileContext } from "./compile.ts";
import type { ReadPathPolicy } from "./decide.ts";
import type { CompileResult } from "./entry.ts";

/** The inputs of `buildReadPathPolicy`. `granted` is the global list followed by the agent's own. */
export interface ReadPathPolicyInput extends CompileContext {
  readonly agentName: string;
  readonly declared: readonly string[];
  readonly granted: readonly string[];
  readonly allowBlueprintReadPaths: boolean;
}

/** The prefix of a grant compile error, everywhere it surfaces. */
export const GRANT_ERROR_PREFIX = "read_paths grant in your config.toml: ";

/**
 * Compile an agent's declarations and grants. `null` when nothing is declared (the policy is
 * inactive and grants are not even compiled); any invalid entry is an error that stops the spawn.
 */
export function buildReadPathPolicy(input: ReadPathPolicyInput): CompileResult<ReadPathPolicy | null> {
  if (input.declared.length === 0) return { ok: true, value: null };
  const ctx: CompileContext = { workdir: input.workdir, home: input.home };
  const declared = compileReadPathSet(input.declared, ctx);
  if (!declared.ok) return { ok: false, error: `agent '${input.agentName}' [read_paths]: ${declared.error}` };
  const granted = compileReadPathSet(input.granted, ctx);
  if (!granted.ok) return { ok: false, error: GRANT_ERROR_PREFIX + granted.error };
  return {
    ok: true,
    value: {
      agentName: input.agentName,
      declared: declared.value,
      granted: granted.value,
      allowBlueprintReadPaths: input.allowBlueprintReadPaths,
    },
  };
}

/**
 * Whether the read tools' taint classification is raised to at least Private (spec §6 step 5):
 * the policy is active and either the override is on or the grant list is non-empty. It keys on
 * "some grant exists", not on whether a declared entry is covered. Taint tracking being on for the
 * agent is the caller's half of the condition.
 */
export function isReadPathGrantActive(policy: ReadPathPolicy | null): boolean {
  if (policy === null || policy.declared.entries.length === 0) return false;
  return policy.allowBlueprintReadPaths || policy.granted.entries.length > 0;
}

/** Entries as a TOML-ish array body, quoted the way upstream quotes them (no escaping). */
export function buildQuotedList(entries: readonly string[]): string {
  return entries.map((entry) => `"${entry}"`).join(", ");
}

/**
 * The once-per-spawn warning (spec §6 step 3), or `null`. It fires only when the override is off and
 * the grant list is empty; a non-covering but non-empty grant list gives no warning here.
 */
export function buildSpawnWarning(policy: ReadPathPolicy | null): string | null {
  if (policy === null || policy.allowBlueprintReadPaths || policy.granted.entries.length > 0) return null;
  const name = policy.agentName;
  const entries = buildQuotedList(policy.declared.entries.map((entry) => entry.raw));
  return (
    `agent '${name}' declares [read_paths] but nothing grants them; reads outside the workdir will be refused. ` +
    `To grant them, add to your config.toml either:\n[security]\nallow_blueprint_read_paths = true\n` +
    `or the specific paths:\n[agent_read_paths.${name}]\nallow = [${entries}]`
  );
}
