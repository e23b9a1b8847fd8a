// Where the run policy comes from: the controller's mounted `run-policy.json` (a cluster), or the agent and
// admin files themselves (standalone: upstream TOML or our YAML). A source tells whether its inputs changed
// (by their bytes, which also sees a kubelet's atomic symlink swap) and loads them; errors name the file and key.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { RunPolicySchema, type RunMode, type RunPolicy } from "../../api/run-policy.ts";
import { formatIssue, type LoadIssue } from "../../config/load-error.ts";
import { loadAgent, loadPolicy } from "../../config/load.ts";
import { buildMcpToolName } from "../../policy/mcp-overrides.ts";
import { buildRunPolicy } from "../../policy/run-policy-merge.ts";

/** A loaded run policy, or every problem found, named by file and key. */
export type PolicyLoad = { ok: true; value: RunPolicy; warnings: string[] } | { ok: false; error: string };

/** Inputs of a run policy that can be checked for change and loaded. */
export interface PolicySource {
  /** What is read, for messages. */
  readonly description: string;
  /** An identity of the inputs' current bytes: equal means unchanged. */
  fingerprint(): string;
  load(): PolicyLoad;
}

function hashFiles(paths: readonly string[]): string {
  const hash = createHash("sha256");
  for (const path of paths) {
    hash.update(`\u0000${path}\u0000`);
    try {
      hash.update(readFileSync(path));
    } catch (err) {
      hash.update(`unreadable:${(err as NodeJS.ErrnoException).code ?? "?"}`);
    }
  }
  return hash.digest("hex");
}

const formatIssues = (issues: readonly LoadIssue[]) => issues.map(formatIssue).join("\n");

/** The controller's rendered run policy (JSON), as mounted from the run's ConfigMap. */
export function createRunPolicyFileSource(path: string): PolicySource {
  return {
    description: path,
    fingerprint: () => hashFiles([path]),
    load(): PolicyLoad {
      let json: unknown;
      try {
        json = JSON.parse(readFileSync(path, "utf8"));
      } catch (err) {
        return { ok: false, error: `${path}: ${err instanceof SyntaxError ? `not JSON: ${err.message}` : `cannot read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`}` };
      }
      const parsed = RunPolicySchema.safeParse(json);
      if (!parsed.success) return { ok: false, error: parsed.error.issues.map((i) => `${path}: ${i.path.join(".") || "(root)"}: ${i.message}`).join("\n") };
      return { ok: true, value: parsed.data, warnings: [] };
    },
  };
}

/** The standalone inputs: an agent file and the admin's files. */
export interface StandaloneFiles {
  readonly agent: string;
  readonly config?: string | undefined;
  readonly policy?: string | undefined;
  readonly rules?: string | undefined;
  readonly namespace?: string | undefined;
  readonly mode: RunMode;
  readonly allow: readonly string[];
}

function agentFile(path: string): string {
  return existsSync(path) && statSync(path).isDirectory() ? join(path, "agent.leviath") : path;
}

function rulesFiles(dir: string | undefined): string[] {
  if (dir === undefined) return [];
  try {
    return readdirSync(dir).filter((n) => n.endsWith(".cel")).sort().map((n) => join(dir, n));
  } catch {
    return [dir];
  }
}

/** An agent blueprint and the admin's config/policy/rules, resolved into a run policy as the controller would. */
export function createStandaloneSource(files: StandaloneFiles): PolicySource {
  const inputs = () => [agentFile(files.agent), files.config, files.policy, ...rulesFiles(files.rules)].filter((p): p is string => p !== undefined);
  return {
    description: inputs().join(", "),
    fingerprint: () => hashFiles(inputs()),
    load(): PolicyLoad {
      const agent = loadAgent(files.agent, files.namespace);
      if (!agent.ok) return { ok: false, error: formatIssues(agent.issues) };
      const policy = loadPolicy({ config: files.config, policy: files.policy, rules: files.rules, namespace: files.namespace }, buildMcpToolName);
      if (!policy.ok) return { ok: false, error: formatIssues(policy.issues) };
      const { spec, key, name } = agent.value;
      const value = buildRunPolicy(spec, { key, name }, policy.value, { mode: files.mode, allow: [...files.allow] });
      return { ok: true, value, warnings: [...agent.warnings, ...policy.warnings].map(formatIssue) };
    },
  };
}
