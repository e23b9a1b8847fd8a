// The integrity section of a LeviathPolicy and of a run policy (issue 40, DESIGN.md §4): who could have written what
// the context holds, and which calls such a context may not choose. Off by default, so a policy without the section
// (an imported upstream config.toml/policy.toml included) behaves exactly as upstream, whose taint is
// confidentiality only; the chart's policy and the examples turn it on.
import { z } from "zod";

/** Who could have written an entry: the Run's own parties (`trusted`) or anyone else (`untrusted`). */
export const INTEGRITY_LEVELS = ["trusted", "untrusted"] as const;
/** An integrity label. */
export type IntegrityLevel = (typeof INTEGRITY_LEVELS)[number];

/**
 * What a call does beyond its result: `read` nothing; `own` changes the user's own data (a file, a calendar entry, a
 * setting); `reach` reaches someone (sends, pays, posts, fetches a URL, runs a command that can). `own` and `reach` are
 * acting: held while the context is untrusted.
 */
export const TOOL_EFFECTS = ["read", "own", "reach"] as const;
/** What a call does. */
export type ToolEffect = (typeof TOOL_EFFECTS)[number];

const IntegritySchema = z.enum(INTEGRITY_LEVELS);

/** One rule of the "allowed under an untrusted context" list: a tool and, optionally, the targets it may act on. */
export const IntegrityAllowlistRuleSchema = z.strictObject({
  tool: z.string().min(1).describe("The tool it applies to, by its exact name."),
  to: z.array(z.string()).default([]).describe("Target patterns ('*' wildcards, as the taint allowlist's); empty: any target. Every target of the call must match."),
  channel: z.array(z.string()).default([]).describe("Channel patterns, as the taint allowlist's."),
}).describe("A call that may act while the context is untrusted (its targets did not come from untrusted data).");
/** One rule of the untrusted-context allowlist. */
export type IntegrityAllowlistRuleSpec = z.infer<typeof IntegrityAllowlistRuleSchema>;

/** Bounds of the index of values in the live context that argument provenance is computed over. */
export const ProvenanceLimitsSchema = z.strictObject({
  maxChars: z.number().int().min(0).max(16_777_216).default(1_048_576)
    .describe("Characters of entry text kept for provenance over all live entries; past it, an untrusted entry's text is not kept and every value not found in trusted text counts as untrusted (fails closed)."),
  minValueLength: z.number().int().min(1).max(64).default(4)
    .describe("Shortest value attributed: a shorter argument value (a small number, a two-letter code) is 'none' (not attributed)."),
}).describe("Bounds of argument provenance.");

/** `spec.integrity` of a LeviathPolicy. */
export const IntegrityPolicySchema = z.strictObject({
  enforce: z.boolean().default(false)
    .describe("Hold acting calls under an untrusted context or with a target from untrusted data (off by default: upstream's taint is confidentiality only, so an imported upstream policy keeps its meaning)."),
  workdir: IntegritySchema.default("trusted").describe("The integrity of files read in the workdir (and of shell output in a sandbox without network); default trusted."),
  readPaths: IntegritySchema.default("trusted").describe("The integrity of files read under granted read paths; default trusted (the admin granted them)."),
  onHold: z.enum(["ask", "deny"]).default("ask")
    .describe("A held call that no allowlist rule or CEL rule allows: ask a person (interactive runs; unattended and headless runs refuse it) or deny it in every mode."),
  allowlist: z.array(IntegrityAllowlistRuleSchema).default([])
    .describe("Calls allowed under an untrusted context (never one whose target came from untrusted data)."),
  rules: z.array(z.strictObject({
    name: z.string().min(1).regex(/^[A-Za-z0-9_.-]+$/, "a rule name is a file stem: letters, digits, '.', '_' and '-'").describe("The rule's name; rules run in name order."),
    expression: z.string().min(1).max(4096).describe("CEL over tool, target, targets, args, args_provenance, integrity, effect, taint_level; true allows the held call."),
  }).describe("One CEL rule for held calls.")).default([]).describe("CEL rules that may allow a held call, in name order."),
  checkTargets: z.boolean().default(false)
    .describe("Every outbound or reaching call whose target no allowlist rule (taint or integrity) names is held, whatever the context's taint (per tool: toolOverrides.<tool>.checkTargets)."),
  provenance: ProvenanceLimitsSchema.default({ maxChars: 1_048_576, minValueLength: 4 }),
}).describe("Integrity: who could have written what the context holds, and which calls such a context may not choose.");
/** The integrity section as parsed. */
export type IntegrityPolicySpec = z.infer<typeof IntegrityPolicySchema>;

/** The integrity fields of a tool override (`taint.toolOverrides.<tool>`). */
export const ToolIntegrityFields = {
  integrity: IntegritySchema.optional()
    .describe("Who could have written what the tool returns: trusted or untrusted (default for a tool not built in: untrusted)."),
  effect: z.enum(TOOL_EFFECTS).optional()
    .describe("What a call does: read (nothing outside its result), own (changes the user's own data) or reach (reaches someone). Default: from direction (inbound read, internal own, outbound reach); a tool not built in without one is reach."),
  checkTargets: z.boolean().optional().describe("Hold a call of this tool whose target no allowlist rule names, whatever the context's taint."),
};
