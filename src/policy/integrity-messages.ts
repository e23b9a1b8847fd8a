// What a person and the model are told about an integrity hold (issue 40): the refusal's text, and the one sentence
// `kubectl leviath why` and `leviath policy test` print, with the change that would allow the call.
import type { UntrustedEntry } from "./context-integrity.ts";
import type { HoldReason, IntegrityFinding } from "./integrity-gate.ts";

function entryText(entry: UntrustedEntry | undefined): string {
  if (entry === undefined) return "";
  return ` (entry '${entry.region}/${entry.entryId}'${entry.tool === undefined ? "" : ` from '${entry.tool}'`})`;
}

function targetsText(targets: readonly string[]): string {
  return targets.length === 0 ? "no target" : targets.map((t) => `'${t}'`).join(", ");
}

/** Why the call is held, as a clause. */
export function describeIntegrityHold(tool: string, f: Pick<IntegrityFinding, "reason" | "entry" | "argument" | "targets"> & { readonly token?: string | undefined }): string {
  switch (f.reason) {
    case "untrusted-target":
      if (f.token !== undefined) return `its argument '${f.argument ?? "?"}' carries '${f.token}', which came from text a third party could have written${entryText(f.entry)}, and from nothing trusted`;
      return `its argument '${f.argument ?? "?"}' came from text a third party could have written${entryText(f.entry)}, and from nothing trusted`;
    case "untrusted-context":
      return `the context holds text a third party could have written${entryText(f.entry)}, and '${tool}' acts`;
    case "unlisted-target":
      return `its targets are checked at any taint and ${targetsText(f.targets)} is on no allowlist rule of '${tool}'`;
  }
}

/** The change to the policy (or the context) that would let the call through. */
export function describeIntegrityChange(tool: string, reason: HoldReason, targets: readonly string[]): string {
  const to = targets.length === 0 ? "" : `, to: [${targets.map((t) => `'${t}'`).join(", ")}]`;
  switch (reason) {
    case "untrusted-target":
      return "name the value in the task (trusted text), or add an integrity rule that allows it (spec.integrity.rules over args_provenance)";
    case "untrusted-context":
      return `add {tool: '${tool}'${to}} to spec.integrity.allowlist, classify '${tool}' as effect: read if it acts on nothing, or evict the untrusted entry`;
    case "unlisted-target":
      return `add {tool: '${tool}'${to}} to spec.taint.allowlist or spec.integrity.allowlist`;
  }
}

/** The refusal of a held call, for the model. */
export function buildIntegrityHeldMessage(tool: string, f: IntegrityFinding): string {
  return `[blocked] Tool '${tool}' was held: ${describeIntegrityHold(tool, f)}. An administrator can allow it: ${describeIntegrityChange(tool, f.reason, f.targets)}.`;
}

/** The prompt text of a held call in an interactive run. */
export function buildIntegrityPrompt(tool: string, f: IntegrityFinding): string {
  return `Tool '${tool}' was held: ${describeIntegrityHold(tool, f)}. Allow it?`;
}
