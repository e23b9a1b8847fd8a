// The filesystem-free "granted over declared" report (spec §8.1–8.4). Each declared entry is reduced
// to one sample path and offered to the grant set lexically. It can disagree with enforcement, and
// the known divergences (§8.4) are kept on purpose: they are what users see upstream.
import { computeLiteralPrefix } from "./entry.ts";
import { compileEntry, compileReadPathSet, type CompileContext, type CompiledEntry, type ReadPathSet } from "./compile.ts";
import { buildQuotedList, GRANT_ERROR_PREFIX } from "./read-path-policy.ts";

/** Whether one declared entry is live under the current config. */
export type GrantStatus = "Granted" | "NotGranted" | "Undetermined";

/** How each status reads in a report. */
export const GRANT_STATUS_LABELS: Readonly<Record<GrantStatus, string>> = {
  Granted: "granted",
  NotGranted: "NOT granted",
  Undetermined: "cannot be checked from the pattern alone",
};

/** The component substituted for wildcards when synthesizing a sample. */
export const SAMPLE_COMPONENT = "_leviath_probe";

/** One declared entry and its verdict. */
export interface ReadPathReportEntry {
  readonly raw: string;
  readonly status: GrantStatus;
  readonly label: string;
}

/** The report for one agent under one config. */
export interface ReadPathReport {
  readonly agentName: string;
  readonly allowBlueprintReadPaths: boolean;
  readonly entries: readonly ReadPathReportEntry[];
  readonly declared: number;
  readonly granted: number;
  /** `"<declared> declared, <granted> granted"`. */
  readonly summary: string;
  /** NotGranted entries in order; Undetermined ones are never listed. */
  readonly ungranted: readonly string[];
  readonly hasUngranted: boolean;
}

/** The report, or the grant-compile error (already prefixed `read_paths grant in your config.toml: `). */
export type ReadPathReportResult = { readonly ok: true; readonly report: ReadPathReport } | { readonly ok: false; readonly error: string };

/** The inputs of a report: the same as spawn, with the current directory as workdir off-run. */
export interface ReadPathReportInput extends CompileContext {
  readonly agentName: string;
  readonly declared: readonly string[];
  readonly granted: readonly string[];
  readonly allowBlueprintReadPaths: boolean;
}

function globSample(pattern: string): string | null {
  let out = "";
  let previousWasStar = false;
  for (const ch of pattern) {
    // A class (including the escapes home/workdir splicing adds) would have to be guessed at.
    if (ch === "[") return null;
    if (ch === "*") {
      if (!previousWasStar) out += SAMPLE_COMPONENT;
      previousWasStar = true;
      continue;
    }
    out += ch === "?" ? "x" : ch;
    previousWasStar = false;
  }
  return out;
}

function regexCandidates(source: string): string[] {
  const body = source.startsWith("^(?:") && source.endsWith(")$") ? source.slice(4, -2) : source;
  const literal = computeLiteralPrefix("regex", body);
  const candidates: string[] = [];
  const slash = literal.lastIndexOf("/");
  if (slash >= 0) candidates.push(`${literal.slice(0, slash)}/${SAMPLE_COMPONENT}`);
  if (literal !== "") candidates.push(literal);
  return candidates;
}

/** One path this entry matches, built from the pattern alone, or `null` when none can be trusted. */
export function computeSamplePath(entry: CompiledEntry): string | null {
  switch (entry.kind) {
    case "exact":
      return entry.root;
    case "glob": {
      const sample = globSample(entry.pattern);
      return sample !== null && entry.matcher.test(sample) ? sample : null;
    }
    case "regex":
      return regexCandidates(entry.source).find((candidate) => entry.matcher.test(candidate)) ?? null;
  }
}

/**
 * Whether a path matches the set as text: an exact root covers itself and its subtree with no
 * canonicalization or `..` folding; globs and regexes match as at run time.
 */
export function isLexicalMatch(set: ReadPathSet, path: string): boolean {
  return set.entries.some((entry) => {
    if (entry.kind !== "exact") return entry.matcher.test(path);
    const root = entry.root.replace(/\/+$/, "");
    return path === root || path.startsWith(`${root}/`);
  });
}

function entryStatus(raw: string, grants: ReadPathSet, input: ReadPathReportInput): GrantStatus {
  if (input.allowBlueprintReadPaths) return "Granted";
  if (grants.entries.length === 0) return "NotGranted";
  const compiled = compileEntry(raw, input);
  const sample = compiled.ok ? computeSamplePath(compiled.value) : null;
  if (sample === null) return "Undetermined";
  return isLexicalMatch(grants, sample) ? "Granted" : "NotGranted";
}

/** Build the report; `null` when nothing is declared (every surface stays silent). */
export function buildReadPathReport(input: ReadPathReportInput): ReadPathReportResult | null {
  if (input.declared.length === 0) return null;
  // A broken grant list is reported even under the override: it is a hard spawn error.
  const grants = compileReadPathSet(input.granted, { workdir: input.workdir, home: input.home });
  if (!grants.ok) return { ok: false, error: GRANT_ERROR_PREFIX + grants.error };
  const entries = input.declared.map((raw): ReadPathReportEntry => {
    const status = entryStatus(raw, grants.value, input);
    return { raw, status, label: GRANT_STATUS_LABELS[status] };
  });
  const granted = entries.filter((entry) => entry.status === "Granted").length;
  const ungranted = entries.filter((entry) => entry.status === "NotGranted").map((entry) => entry.raw);
  return {
    ok: true,
    report: {
      agentName: input.agentName,
      allowBlueprintReadPaths: input.allowBlueprintReadPaths,
      entries,
      declared: entries.length,
      granted,
      summary: `${entries.length} declared, ${granted} granted`,
      ungranted,
      hasUngranted: ungranted.length > 0,
    },
  };
}

/** A TOML key as written in a table header: bare when TOML allows it, else a quoted string (`"team/cto"`). */
export function formatTomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

/** The config stanza granting everything refused, ready to paste; empty when nothing is refused. */
export function buildGrantStanza(report: ReadPathReport): string[] {
  if (!report.hasUngranted) return [];
  return [`[agent_read_paths.${formatTomlKey(report.agentName)}]`, `allow = [${buildQuotedList(report.ungranted)}]`];
}
