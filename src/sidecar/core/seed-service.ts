// Seed resolutions (`POST /v1/seeds`), transport-free: a path seed goes through the read-path fence
// (executors/seeds.ts); a command seed must be allowed by the policy and covered by `[safe_commands]`
// (policy/seed-commands.ts) and runs in the entry stage's sandbox through the same executor as `shell` (pods/exec
// in a cluster, the confined local shell standalone), under the shell timeout and the executor's output caps. A
// non-zero exit is an error, not data (sandbox-and-blueprint §3.6). Every resolution, filled or refused, is one
// audit record and one count; a record that cannot be written refuses the seed (fail closed).
import type { z } from "zod";
import type { DecisionSourceName } from "../../api/decision-sources.ts";
import { buildRefusalMessage, REFUSALS, type RefusalCode, type SeedBodySchema } from "../../api/sidecar-contract.ts";
import type { Level } from "../../policy/levels.ts";
import { lookupResultLabel } from "../../policy/classification.ts";
import { decideSeedCommand } from "../../policy/seed-commands.ts";
import type { PathFs } from "../../policy/read-paths/index.ts";
import type { SeedFormLabel, SidecarMetrics } from "../../metrics/sidecar-metrics.ts";
import { fillSeed, type SeedSource } from "../executors/seeds.ts";
import { computeShellOutcome, type ShellExecutor } from "../executors/shell.ts";
import { MAX_READ_FILES_TOTAL_BYTES } from "../executors/file-tools.ts";
import type { SeedAuditFields } from "../storage/audit-writer.ts";
import type { Ledger } from "./ledger.ts";
import { findStageIndex, type Enforcement } from "./enforcement.ts";

/** The `tool_name` of seed records, and the `decision_source` of a command seed's. */
export const SEED_RECORD = { tool: "seed", commandSource: "safe_commands" } as const satisfies { tool: string; commandSource: SeedDecisionSource };

/** The decision sources of seed records (a path seed's as for `read_file`, or the blueprint's own files). */
type SeedDecisionSource = Extract<DecisionSourceName, "read_path" | "workdir" | "blueprint" | "safe_commands">;

/** A seed as the runtime sends it: a path form, or a command. */
export type AnySeed = z.infer<typeof SeedBodySchema>["seed"];

/** What resolving seeds needs. */
export interface SeedServiceDeps {
  readonly workdir: string;
  readonly blueprintRoot: string | undefined;
  readonly fs: PathFs;
  readonly shell: ShellExecutor;
  /** Where each resolution is recorded (and a record that could not be written counted). */
  readonly ledger: Pick<Ledger, "record">;
  readonly metrics: SidecarMetrics;
  readonly clock: () => number;
  readonly runName: string;
  readonly stageIndex: () => number;
}

/**
 * A filled seed, or why not, as its row says (`refused`: a check said no; `failed`: allowed, but it could not be
 * filled; `unavailable`: its audit record could not be written).
 */
export type SeedResolution = SeedFill | { readonly ok: false; readonly outcome: "unavailable"; readonly code: "audit-failed"; readonly message: string };

/** A seed as filling it came out, before it is recorded. */
type SeedFill =
  | { readonly ok: true; readonly content: string; readonly sources: readonly SeedSource[]; readonly label: Level }
  | { readonly ok: false; readonly outcome: "refused" | "failed"; readonly code: RefusalCode; readonly message: string };

const formOf = (seed: AnySeed): SeedFormLabel => (Object.keys(seed)[0] as SeedFormLabel);
/** A seed not filled is `failed` when its row says so (allowed, but it could not be filled), else `refused`. */
const seedOutcomeOf = (code: RefusalCode): "refused" | "failed" => (REFUSALS[code].outcome === "failed" ? "failed" : "refused");

/** Resolves seeds for one run. */
export class SeedService {
  readonly #d: SeedServiceDeps;
  #count = 0;

  /** A service over its executor and sinks. */
  constructor(deps: SeedServiceDeps) {
    this.#d = deps;
  }

  /** Fills one region's seed, under the policy in force. */
  async resolve(region: string, seed: AnySeed, enf: Enforcement): Promise<SeedResolution> {
    const form = formOf(seed);
    let result: SeedFill;
    let extra: Partial<SeedAuditFields> = {};
    if ("command" in seed) {
      const r = await this.#command(region, seed.command, enf);
      result = r.result;
      extra = r.audit;
    } else {
      const filled = fillSeed(region, seed, {
        resolve: { workdir: this.#d.workdir, policy: enf.readPolicy, fs: this.#d.fs },
        blueprintRoot: this.#d.blueprintRoot,
        workdirLabel: lookupResultLabel(enf.resultLabels, "read_file"),
      });
      result = filled.ok ? filled : { ok: false, outcome: seedOutcomeOf(filled.code), code: filled.code, message: filled.message };
      if (filled.ok) extra = { sources: filled.sources };
    }
    const outcome = result.ok ? "filled" : result.outcome;
    this.#d.metrics.seed(form, outcome);
    const fields: SeedAuditFields = { region, form, outcome, ...extra, ...(result.ok ? { label: result.label } : {}) };
    if (!this.#record(fields, result, enf)) {
      return { ok: false, outcome: REFUSALS["audit-failed"].outcome, code: "audit-failed", message: buildRefusalMessage("audit-failed", SEED_RECORD.tool, region) };
    }
    return result;
  }

  async #command(region: string, command: string, enf: Enforcement): Promise<{ result: SeedFill; audit: Partial<SeedAuditFields> }> {
    const decided = decideSeedCommand(region, command, enf.runPolicy.seedCommands);
    if (!decided.ok) return { result: { ok: false, outcome: "refused", code: decided.code, message: decided.message }, audit: {} };
    const policy = enf.runPolicy;
    // At spawn the run is in its entry stage: that stage's sandbox runs the command, as upstream.
    const stage = policy.stages[Math.max(0, findStageIndex(policy, policy.entryStage))]!;
    const timeoutSeconds = policy.limits.shellTimeoutSeconds;
    const r = await this.#d.shell.run({ command, timeoutSeconds, stage });
    this.#d.metrics.shell(this.#d.shell.label, computeShellOutcome(r));
    const audit = { safe_command_prefix: decided.prefix, sandbox_stage: stage.name, exit_code: r.exitCode };
    const fail = (code: RefusalCode, why: string) => ({ result: { ok: false as const, outcome: "failed" as const, code, message: `region '${region}': seed command '${command}' ${why}` }, audit });
    if (r.error !== undefined) return fail("seed-command-failed", `could not be run: ${r.error}`);
    if (r.capped !== undefined) return fail("seed-command-capped", `was stopped: ${r.capped}`);
    if (r.timedOut) return fail("seed-command-timed-out", `timed out after ${timeoutSeconds} seconds`);
    if (r.exitCode !== 0) return fail("seed-command-failed", `exited with code ${r.exitCode ?? "unknown"}${r.stderr.trim() === "" ? "" : `: ${r.stderr.trim().slice(-500)}`}`);
    if (Buffer.byteLength(r.stdout) > MAX_READ_FILES_TOTAL_BYTES) return fail("seed-command-capped", `wrote more than ${MAX_READ_FILES_TOTAL_BYTES} bytes, the most a seed holds`);
    const label = lookupResultLabel(enf.resultLabels, "shell");
    return { result: { ok: true, content: r.stdout, sources: [], label }, audit };
  }

  #record(seed: SeedAuditFields, result: SeedFill, enf: Enforcement): boolean {
    const stage = enf.runPolicy.stages[this.#d.stageIndex()]?.name ?? enf.runPolicy.entryStage;
    const source = seed.form === "command" ? SEED_RECORD.commandSource : sourceOfPaths(result);
    return this.#d.ledger.record({
      timestamp: Math.floor(this.#d.clock() / 1000), agent_id: this.#d.runName, call_id: `seed-${++this.#count}`, tool_name: SEED_RECORD.tool, stage,
      decision: result.ok || result.outcome === "failed" ? "allow" : "deny", decision_source: source,
      ...(result.ok ? {} : { code: result.code }),
      ...(result.ok && result.sources.length > 0 ? { paths: result.sources.map((s) => s.path) } : {}),
      seed,
    });
  }
}

/** The decision source of a path seed, as for `read_file`: `read_path` when a grant let it out, else `workdir`. */
function sourceOfPaths(result: SeedFill): SeedDecisionSource {
  if (!result.ok) return result.code === "seed-outside-blueprint" ? "blueprint" : "read_path";
  if (result.sources.some((s) => s.origin === "granted")) return "read_path";
  return result.sources.some((s) => s.origin === "blueprint") ? "blueprint" : "workdir";
}
