// The `[read_paths]` findings of `lev validate` (spec §8.5), as data, in generation order. Sorting by
// severity (stable: errors, then warnings, then notes) is the caller's job. The texts are upstream's; the advice
// (`fix`) names the admin's file it is read against: upstream's config.toml, or the LeviathPolicy's fields.
import { FINDING_CODE, type Finding, type FindingAdvice, type FindingSeverity } from "../../api/findings.ts";
import { GRANT_ERROR_PREFIX } from "./read-path-policy.ts";
import { splitEntryPrefix } from "./entry.ts";
import { compileAnchoredRegex, escapeRegexLiteral } from "./regex.ts";
import { buildGrantStanza, type ReadPathReport, type ReadPathReportResult } from "./report.ts";

/** The inputs of the read-path lint. `"offline"` means no user config could be loaded. */
export interface ReadPathLintInput {
  readonly declared: readonly string[];
  readonly report: ReadPathReportResult | "offline";
  /** Where the advice points (default: upstream's config.toml). */
  readonly advice?: FindingAdvice["policy"];
  /** The per-agent grant key of the LeviathPolicy (`namespace/name`), for its advice. */
  readonly agentKey?: string;
}

const DECLARED_PREFIX = "declares [read_paths] (reads outside the run workdir): ";

function finding(severity: FindingSeverity, code: Finding["code"], message: string, fix: string | null): Finding {
  return { severity, code, message, ...(fix !== null ? { fix } : {}) };
}

/**
 * Paths under unrelated roots, none of them anybody's home: a `regex:` entry that matches every one of them can
 * match any path on this machine, however it is written (`regex:/.*`, `regex:/x|.*`, `regex:/(?s:.)*`).
 */
const BROAD_PROBES = ["/etc/shadow", "/root/.ssh/id_ed25519", "/proc/1/environ", "/var/lib/leviath-probe/x", "/"] as const;

/** The home directory a `~` regex is probed with: outside every probe, so `regex:~/.*` is not broad. */
const PROBE_HOME = "/leviath-probe-home";

function isBroadRegex(body: string): boolean {
  const absolute = body.startsWith("~") ? escapeRegexLiteral(PROBE_HOME) + body.slice(1) : body;
  const compiled = compileAnchoredRegex(absolute);
  // An entry that does not compile is reported as invalid elsewhere.
  return compiled.ok && BROAD_PROBES.every((p) => compiled.value.matcher.test(p));
}

/**
 * Whether an entry is flagged as very broad. Upstream's textual rule flags `~`, `~/`, `/`, `glob:**`,
 * `glob:/**`, `regex:/.*` and `regex:/.+`, and not `glob:~/**`, `regex:~/.*`, `glob:/*` or `/home`; a `regex:`
 * entry is also flagged when it matches every path of a set under unrelated roots (`regex:/x|.*`).
 */
export function isBroadReadPath(entry: string): boolean {
  const form = splitEntryPrefix(entry);
  if (form.kind === "regex" && isBroadRegex(form.text)) return true;
  // Upstream turns `\` into `/` here for every form, not only globs.
  const text = form.text.replaceAll("\\", "/");
  const trimmed = text.replace(/\/+$/, "");
  return trimmed === "~" || trimmed === "" || trimmed === "/**" || text.startsWith("**") || text.startsWith("/.*") || trimmed === "/.+";
}

/** The grant to add, as a line under the LeviathPolicy's `spec.readPaths.perAgent` (a YAML mapping entry). */
function buildPolicyGrant(report: ReadPathReport, key: string): string {
  return `add to spec.readPaths.perAgent of the LeviathPolicy: ${JSON.stringify(key)}: [${report.ungranted.map((e) => JSON.stringify(e)).join(", ")}]`;
}

function grantFindings(input: ReadPathLintInput): Finding[] {
  const { report: result, declared } = input;
  const policy = input.advice === "LeviathPolicy";
  if (result === "offline") {
    return [finding("note", FINDING_CODE.readPathsDeclared, DECLARED_PREFIX + declared.join(", "), "these are refused unless your own config grants them")];
  }
  if (!result.ok) {
    return policy
      ? [finding("warning", FINDING_CODE.readPathsGrantInvalid, result.error.replace(GRANT_ERROR_PREFIX, "read_paths grant in the LeviathPolicy: "), "fix the entry in spec.readPaths of the LeviathPolicy, or remove it")]
      : [finding("warning", FINDING_CODE.readPathsGrantInvalid, result.error, "fix the entry in your config.toml, or remove it")];
  }
  const report = result.report;
  const fix = report.allowBlueprintReadPaths
    ? policy ? "all granted by spec.readPaths.allowBlueprintReadPaths: true of the LeviathPolicy" : "all granted by [security] allow_blueprint_read_paths = true"
    : report.entries.map((entry) => `${entry.raw}: ${entry.label}`).join("; ");
  const findings = [finding("note", FINDING_CODE.readPathsDeclared, DECLARED_PREFIX + report.summary, fix)];
  if (report.hasUngranted) {
    findings.push(
      finding(
        "warning",
        FINDING_CODE.readPathsNotGranted,
        `your config does not grant ${report.ungranted.join(", ")}: reads matching them will be refused`,
        policy ? buildPolicyGrant(report, input.agentKey ?? report.agentName) : `add to your config.toml: ${buildGrantStanza(report).join(" ")}`,
      ),
    );
  }
  return findings;
}

/** The read-path findings for one blueprint, in the order upstream generates them. */
export function computeReadPathFindings(input: ReadPathLintInput): Finding[] {
  if (input.declared.length === 0) return [];
  const broad = input.declared
    .filter(isBroadReadPath)
    .map((entry) =>
      finding(
        "warning",
        FINDING_CODE.broadReadPath,
        `read_paths entry '${entry}' is very broad - it can match your entire home directory or any path on this machine`,
        "name the directory it actually needs",
      ),
    );
  return [...grantFindings(input), ...broad];
}

const LABELS: Readonly<Record<FindingSeverity, string>> = { error: "ERR ", warning: "WARN", note: "NOTE" };

/** One finding as `lev validate` prints it: `  <LABEL> <message> [<code>]`, then a 7-space fix line. */
export function renderFinding(f: { readonly severity: FindingSeverity; readonly code: string; readonly message: string; readonly fix?: string | undefined }): string {
  const head = `  ${LABELS[f.severity]} ${f.message} [${f.code}]`;
  return f.fix === undefined ? head : `${head}\n       ${f.fix}`;
}
