// Integrity (issue 40) in policy.toml: ours, not upstream's, so an upstream file never has it and keeps its meaning.
// `[integrity]` maps onto a LeviathPolicy's spec.integrity and `[mcp_overrides.<tool>]` takes `integrity`, `effect`
// and `check_targets` beside upstream's fields; the schema checks the values and names the field.
import { isTable, type TomlDoc } from "./toml-source.ts";
import type { IntegrityPolicySpec } from "../api/integrity-policy.ts";
import type { LoadIssue } from "./load-error.ts";

/** The keys of `[integrity]`, snake_case as upstream's files spell keys, to spec.integrity's. */
const INTEGRITY_KEYS: Readonly<Record<string, keyof IntegrityPolicySpec>> = {
  enforce: "enforce", workdir: "workdir", read_paths: "readPaths", on_hold: "onHold", check_targets: "checkTargets", allowlist: "allowlist", rules: "rules", provenance: "provenance",
};
const PROVENANCE_KEYS: Readonly<Record<string, string>> = { max_chars: "maxChars", min_value_length: "minValueLength" };

/** The integrity fields of a `[mcp_overrides]` entry. */
export const INTEGRITY_OVERRIDE_KEYS: Readonly<Record<string, string>> = { integrity: "integrity", effect: "effect", check_targets: "checkTargets" };

/** The integrity fields an override sets, renamed to the schema's. */
export function pickIntegrityOverride(fields: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, to] of Object.entries(INTEGRITY_OVERRIDE_KEYS)) if (k in fields) out[to] = fields[k];
  return out;
}

/** `[integrity]` as spec.integrity; an unknown key is an issue naming it (a typo would drop a setting silently). */
export function mapIntegrityToml(doc: TomlDoc, issue: (table: string[], key: string, message: string) => LoadIssue): { integrity: Record<string, unknown> | undefined; issues: LoadIssue[] } {
  const raw = doc.data["integrity"];
  if (raw === undefined) return { integrity: undefined, issues: [] };
  if (!isTable(raw)) return { integrity: undefined, issues: [issue([], "integrity", "[integrity] must be a table")] };
  const issues: LoadIssue[] = [];
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    const to = INTEGRITY_KEYS[k];
    if (to === undefined) {
      issues.push(issue(["integrity"], k, `[integrity] has unknown key '${k}' (valid: ${Object.keys(INTEGRITY_KEYS).join(", ")})`));
      continue;
    }
    out[to] = k === "provenance" && isTable(v) ? renameKeys(v, PROVENANCE_KEYS, (key) => issues.push(issue(["integrity", "provenance"], key, `[integrity.provenance] has unknown key '${key}' (valid: max_chars, min_value_length)`))) : v;
  }
  return { integrity: out, issues };
}

function renameKeys(table: Record<string, unknown>, names: Readonly<Record<string, string>>, unknown: (key: string) => void): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(table)) {
    const to = names[k];
    if (to === undefined) unknown(k);
    else out[to] = v;
  }
  return out;
}
