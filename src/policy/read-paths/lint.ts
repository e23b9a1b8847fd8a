// The `[read_paths]` findings of `lev validate` (spec §8.5), as data, in generation order. Sorting by
// severity (stable: errors, then warnings, then notes) is the caller's job.
import { splitEntryPrefix } from "./entry.ts";
import { compileAnchoredRegex, escapeRegexLiteral } from "./regex.ts";
import { buildGrantStanza, type ReadPathReportResult } from "./report.ts";

/** Finding severities, as `lev validate --json` spells them. */
export type FindingSeverity = "error" | "warning" | "note";

/** The codes this module emits. */
export type ReadPathFindingCode = "read-paths-declared" | "read-paths-not-granted" | "read-paths-grant-invalid" | "broad-read-path";

/** One finding, in the `--json` shape. `stage` is always null for blueprint-level findings. */
export interface ReadPathFinding {
  readonly severity: FindingSeverity;
  readonly code: ReadPathFindingCode;
  readonly stage: null;
  readonly message: string;
  readonly fix: string | null;
}

/** The inputs of the read-path lint. `"offline"` means no user config could be loaded. */
export interface ReadPathLintInput {
  readonly declared: readonly string[];
  readonly report: ReadPathReportResult | "offline";
}

const DECLARED_PREFIX = "declares [read_paths] (reads outside the run workdir): ";

function finding(severity: FindingSeverity, code: ReadPathFindingCode, message: string, fix: string | null): ReadPathFinding {
  return { severity, code, stage: null, message, fix };
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

function grantFindings(result: ReadPathReportResult | "offline", declared: readonly string[]): ReadPathFinding[] {
  if (result === "offline") {
    return [finding("note", "read-paths-declared", DECLARED_PREFIX + declared.join(", "), "these are refused unless your own config grants them")];
  }
  if (!result.ok) {
    return [finding("warning", "read-paths-grant-invalid", result.error, "fix the entry in your config.toml, or remove it")];
  }
  const report = result.report;
  const fix = report.allowBlueprintReadPaths
    ? "all granted by [security] allow_blueprint_read_paths = true"
    : report.entries.map((entry) => `${entry.raw}: ${entry.label}`).join("; ");
  const findings = [finding("note", "read-paths-declared", DECLARED_PREFIX + report.summary, fix)];
  if (report.hasUngranted) {
    findings.push(
      finding(
        "warning",
        "read-paths-not-granted",
        `your config does not grant ${report.ungranted.join(", ")}: reads matching them will be refused`,
        `add to your config.toml: ${buildGrantStanza(report).join(" ")}`,
      ),
    );
  }
  return findings;
}

/** The read-path findings for one blueprint, in the order upstream generates them. */
export function computeReadPathFindings(input: ReadPathLintInput): ReadPathFinding[] {
  if (input.declared.length === 0) return [];
  const broad = input.declared
    .filter(isBroadReadPath)
    .map((entry) =>
      finding(
        "warning",
        "broad-read-path",
        `read_paths entry '${entry}' is very broad - it can match your entire home directory or any path on this machine`,
        "name the directory it actually needs",
      ),
    );
  return [...grantFindings(input.report, input.declared), ...broad];
}

const LABELS: Readonly<Record<FindingSeverity, string>> = { error: "ERR ", warning: "WARN", note: "NOTE" };

/** One finding as `lev validate` prints it: `  <LABEL> <message> [<code>]`, then a 7-space fix line. */
export function renderFinding(f: { readonly severity: FindingSeverity; readonly code: string; readonly message: string; readonly fix: string | null }): string {
  const head = `  ${LABELS[f.severity]} ${f.message} [${f.code}]`;
  return f.fix === null ? head : `${head}\n       ${f.fix}`;
}
