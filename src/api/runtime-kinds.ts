/** The runtime kinds an Agent may name (within the admin's ceilings). `leviath` is the reference runtime. */
export const RUNTIME_KINDS = ["leviath", "claude-code", "codex", "openai-agents", "mcp-command"] as const;
/** One runtime kind. */
export type RuntimeKind = (typeof RUNTIME_KINDS)[number];

/** The reference runtime (`leviath agent`): the kind an Agent has when it names none, always within the ceiling. */
export const REFERENCE_RUNTIME_KIND = "leviath" satisfies RuntimeKind;
