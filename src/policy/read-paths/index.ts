// Public API of the read-path policy core: `[read_paths]` syntax, compilation, decisions, request
// resolution and the report surfaces. Everything here is pure; the filesystem comes in as `PathFs`.
export { computeLiteralPrefix, computeLiteralRoot, EMPTY_ENTRY_ERROR, ENTRY_PREFIXES, ENTRY_REASONS, MAX_ENTRY_LENGTH, formatEntryError, isAbsoluteShaped, normalizeGlobText, parseEntryForm, splitEntryPrefix } from "./entry.ts";
export type { CompileResult, EntryForm } from "./entry.ts";
export { compileGlob, escapeGlobLiteral, parseGlob } from "./glob.ts";
export type { GlobToken, PathMatcher } from "./glob.ts";
export { compileAnchoredRegex, escapeRegexLiteral } from "./regex.ts";
export type { AnchoredRegex, AnchoredRegexResult } from "./regex.ts";
export { compileEntry, compileReadPathSet, resolveLeviathHome, validateEntrySyntax, VALIDATION_CONTEXT } from "./compile.ts";
export type { CompileContext, CompiledEntry, ReadPathSet } from "./compile.ts";
export { canonicalizeForMatch, foldLexically, isWithin, joinRequest, tryRealpath } from "./canonicalize.ts";
export type { PathFs } from "./canonicalize.ts";
export { decide, isEntryMatch, isSetMatch, MatchProbe } from "./decide.ts";
export type { ReadPathDecision, ReadPathPolicy } from "./decide.ts";
export { buildQuotedList, buildReadPathPolicy, buildSpawnWarning, GRANT_ERROR_PREFIX, isReadPathGrantActive } from "./read-path-policy.ts";
export type { ReadPathPolicyInput } from "./read-path-policy.ts";
export { resolveRead, resolveWrite } from "./resolve.ts";
export type { PathResolution, RefusedPath, ResolutionCode, ResolutionDecision, ResolveContext, ResolvedPath, WorkdirRefusalCode } from "./resolve.ts";
export { buildGrantStanza, buildReadPathReport, computeSamplePath, GRANT_STATUS_LABELS, isLexicalMatch, SAMPLE_COMPONENT } from "./report.ts";
export type { GrantStatus, ReadPathReport, ReadPathReportEntry, ReadPathReportInput, ReadPathReportResult } from "./report.ts";
export { computeReadPathFindings, isBroadReadPath, renderFinding } from "./lint.ts";
export type { ReadPathLintInput } from "./lint.ts";
export { BLUEPRINT_SEED_PREFIX, buildSeedOutsideMessage, resolveBlueprintSeedPath, resolveSeedPath } from "./seed.ts";
export type { SeedOrigin, SeedPathResolution } from "./seed.ts";
