// The sidecar's /v1 contract, the one home of what both ends of the wire agree on: the request bodies (zod, parsed
// at the sidecar's boundary), the answers (zod, parsed by the client), `EntryRef`, and the refusal table. A refusal
// is one row: its code, the audit's decision source, its outcome kind, its HTTP status and its message. The core
// denies by code, the routes answer the row's status, MCP carries the code and source in `_meta`, the client fails
// closed with its own rows: adding a refusal is one row here. Codes, sources, statuses and messages are upstream's
// and observable; `sidecar-contract.test.ts` pins them.
import { z } from "zod";
import { APPROVAL_DECISIONS } from "./approval.ts";
import type { CallDecisionSource, DecisionSourceName } from "./decision-sources.ts";
import type { LevelName } from "./common.ts";
import { MAX_RESULT_BYTES, RunResultSchema } from "./status.ts";
import { MAX_READ_FILES } from "./tools.ts";

/** The audit `decision_source` of a recorded refusal: a row of the decision-source table. */
export type RefusalSource = DecisionSourceName;

/**
 * What kind of refusal: the request is malformed (`invalid`), a check said no (`refused`), it clashes with what
 * the sidecar holds (`conflict`), the sidecar cannot decide it now (`unavailable`), it was allowed but could not be
 * done (`failed`), it names nothing known (`unknown`), it lacks its token (`unauthenticated`), what it answers is
 * gone (`gone`), a bug (`internal`), or the client gave up on the sidecar (`fail-closed`, no HTTP status).
 */
export type RefusalOutcome = "invalid" | "refused" | "conflict" | "unavailable" | "failed" | "unknown" | "unauthenticated" | "gone" | "internal" | "fail-closed";

/** The statuses a refusal is answered with. */
export type RefusalStatus = 400 | 401 | 403 | 404 | 409 | 410 | 413 | 422 | 500 | 503;

/** One refusal: everything observable about it but the code, which is its key. */
export interface RefusalRow {
  /** The audit's decision source when the refusal of a call is a recorded decision; absent: never recorded as one. */
  readonly source?: RefusalSource;
  readonly outcome: RefusalOutcome;
  /** The HTTP status of the refusal on `/v1`; absent only for the client's own (`fail-closed`). */
  readonly status?: RefusalStatus;
  /** The message (the tool result for the model, on a call); text built by the policy passes through as is. */
  readonly message: (...args: never[]) => string;
}

const asIs = (text: string): string => text;
const pathError = (text: string): string => `[error] ${text}`;
const readPath = { source: "read_path", outcome: "refused", status: 403, message: pathError } as const;
const workdir = { source: "workdir", outcome: "refused", status: 403, message: pathError } as const;
const seedRefused = { outcome: "refused", status: 403, message: asIs } as const;
const seedFailed = { outcome: "failed", status: 422, message: asIs } as const;
const failClosed = { outcome: "fail-closed", message: (tool: string, why: string) => `[denied] Tool '${tool}' was not run: the sidecar did not answer (${why}).` } as const;

/** Every refusal by code (docs/sidecar-api.md lists them for people). */
export const REFUSALS = {
  // A tool call, decided by the core (`POST /v1/tool-calls`, `GET /v1/tool-calls/{id}`, MCP `tools/call`).
  "invalid-request": { outcome: "invalid", status: 400, message: asIs },
  // A call whose request does not parse (no id, a tool name that is not a string, arguments that are not an object,
  // a malformed deadline): refused before any decision, but recorded and counted like every refusal of a call.
  "invalid-call": { source: "invalid_arguments", outcome: "invalid", status: 400, message: asIs },
  "invalid-arguments": { source: "invalid_arguments", outcome: "invalid", status: 400, message: (tool: string, detail: string) => `[error] Invalid arguments for '${tool}': ${detail}` },
  "result-too-large": {
    source: "invalid_arguments", outcome: "invalid", status: 400,
    message: (tool: string, bytes: number) => `[error] Tool '${tool}' was not run: the output is ${bytes} bytes and a Run's result holds at most ${MAX_RESULT_BYTES}; write the large parts to files in the workdir and submit a shorter answer.`,
  },
  "duplicate-call-id": { outcome: "conflict", status: 409, message: (id: string) => `[error] call id '${id}' was already used for another call` },
  "tool-unavailable": { source: "tool_unavailable", outcome: "refused", status: 403, message: (tool: string, stage: string) => `[unavailable] Tool '${tool}' is not available in stage '${stage}'.` },
  "permission-denied": { source: "permission_deny", outcome: "refused", status: 403, message: asIs },
  "approval-unavailable": { source: "approval_unavailable", outcome: "refused", status: 403, message: asIs },
  "approval-declined": { source: "user_declined", outcome: "refused", status: 403, message: asIs },
  // A prompt nobody answered within the interaction timeout: the model gets upstream's text for a declined or
  // expired prompt (taint-gate spec §5.3 and §3.6 give one text for both); the code and the source say it expired.
  "approval-timed-out": { source: "approval_timed_out", outcome: "refused", status: 403, message: asIs },
  "gate-blocked": { source: "auto_block", outcome: "refused", status: 403, message: asIs },
  "gate-denied": { source: "user_denied", outcome: "refused", status: 403, message: asIs },
  "gate-timed-out": { source: "gate_timed_out", outcome: "refused", status: 403, message: asIs },
  // An acting call the integrity gate held (issue 40) that nothing allowed: unattended, headless, or onHold deny.
  "integrity-held": { source: "integrity_held", outcome: "refused", status: 403, message: asIs },
  "not-declared": readPath,
  "not-granted": readPath,
  "unresolvable": readPath,
  "unverifiable": readPath,
  "outside-workdir": workdir,
  "escapes-workdir": workdir,
  "symlink-escape": workdir,
  "workspace-missing": workdir,
  "path-changed": { source: "path_changed", outcome: "refused", status: 403, message: (request: string) => `[error] path '${request}' changed while it was being opened; it was not read` },
  "hard-link": {
    source: "hard_link", outcome: "refused", status: 403,
    message: (request: string, links: number) => `[error] '${request}' is a file with ${links} hard links; files with more than one name are never read or written (their other names may be outside every allowed path)`,
  },
  "local-address": {
    source: "local_network", outcome: "refused", status: 403,
    message: (tool: string, host: string, address: string) => `[denied] Tool '${tool}': '${host}' resolves to ${address}, a local address, and this policy does not allow local network access (allowLocalNetwork); nothing was sent there.`,
  },
  "client-gave-up": { source: "client_gave_up", outcome: "refused", status: 403, message: (tool: string) => `[denied] Tool '${tool}' was not run: its client had stopped waiting for the answer.` },
  "pending-full": {
    source: "pending_full", outcome: "unavailable", status: 503,
    message: (tool: string, maxCalls: number) => `[denied] Tool '${tool}' was not run: ${maxCalls} calls are already pending (or their arguments fill the pending budget); settle some and retry.`,
  },
  // Also a seed whose record could not be written (tool `seed`, its region named).
  "audit-failed": {
    source: "audit_failed", outcome: "unavailable", status: 503,
    message: (tool: string, region?: string) => region === undefined
      ? `[denied] Tool '${tool}' was not run: its audit record could not be written.`
      : `region '${region}': the seed's audit record could not be written, so the seed was not used`,
  },
  "result-not-stored": { source: "audit_failed", outcome: "unavailable", status: 503, message: (tool: string) => `[error] Tool '${tool}' was not run: its output could not be stored.` },
  "sidecar-stopping": { outcome: "unavailable", status: 503, message: (tool: string) => `[denied] Tool '${tool}' was not run: the sidecar is stopping.` },
  // The other routes and the request guard.
  "unknown-call": { outcome: "unknown", status: 404, message: (id: string) => `no tool call '${id}'` },
  "not-run": { outcome: "conflict", status: 409, message: (id: string) => `tool call '${id}' was not decided 'run'` },
  "unknown-stage": { outcome: "unknown", status: 404, message: (stage: string) => `no stage '${stage}' in the run policy` },
  // MCP `next_stage`: a stage the current one has no `llm_choice` edge to; POST /v1/stage: one it does not declare (recorded, with `from_stage`).
  "transition-not-allowed": {
    source: "transition", outcome: "refused", status: 403,
    message: (to: string, from: string, allowed: string) => `[error] '${to}' is not a stage that stage '${from}' leads to (${allowed})`,
  },
  "approvals-by-resource": { outcome: "refused", status: 403, message: () => "prompts of this run are answered with Approval resources, not over this API" },
  "approval-token-required": { outcome: "unauthenticated", status: 401, message: () => "answering a prompt needs the approval token (Authorization: Bearer <token>)" },
  "unknown-approval": { outcome: "unknown", status: 404, message: (id: string) => `no pending approval '${id}'` },
  "approval-withdrawn": {
    outcome: "gone", status: 410,
    message: (id: string) => `prompt '${id}' was withdrawn: the client of its call gave up waiting, so the call was refused and will never run`,
  },
  "request-too-large": { outcome: "invalid", status: 413, message: () => `request body exceeded ${MAX_REQUEST_BODY_BYTES / 1024 / 1024} MiB` },
  "internal-error": { outcome: "internal", status: 500, message: () => "the sidecar failed to decide this request" },
  "not-found": { outcome: "unknown", status: 404, message: (method: string, url: string) => `no route ${method} ${url}` },
  "host-not-allowed": { outcome: "refused", status: 403, message: (host: string) => `Host '${host}' is not an address this sidecar listens on` },
  "browser-request": { outcome: "refused", status: 403, message: () => "requests from a browser are refused (Origin or Sec-Fetch-Site was sent)" },
  "runtime-token-required": { outcome: "unauthenticated", status: 401, message: () => "this API needs the runtime token (Authorization: Bearer <the contents of the runtime token file>)" },
  // A warm pool's pod (docs/controller.md, "Late binding, in the pod"): `POST /v1/binding` and every call before it is bound.
  "not-bound": { outcome: "unavailable", status: 503, message: () => "this pool pod is not bound to a Run yet: every call is refused" },
  "binding-given": { outcome: "conflict", status: 409, message: () => "this Run's binding was already handed out once; it is never handed out again" },
  "binding-unavailable": { outcome: "unavailable", status: 503, message: (why: string) => `the binding cannot be handed out: ${why}` },
  // `POST /v1/seeds`: a check's refusal, or a seed that could not be filled.
  "invalid-seed": { outcome: "invalid", status: 422, message: asIs },
  "seed-outside-workdir": seedRefused,
  "seed-outside-blueprint": seedRefused,
  "seed-commands-disabled": seedRefused,
  "seed-command-not-safe": seedRefused,
  "seed-unreadable": seedFailed,
  "seed-command-failed": seedFailed,
  "seed-command-timed-out": seedFailed,
  "seed-command-capped": seedFailed,
  // The client's own, when the sidecar gave no usable answer: always a deny.
  "sidecar-unavailable": failClosed,
  "sidecar-invalid-response": failClosed,
} as const satisfies Readonly<Record<string, RefusalRow>>;

type Refusals = typeof REFUSALS;

/** A refusal's code. */
export type RefusalCode = keyof Refusals;

/** The codes whose refusal is recorded (a row with a decision source). */
export type SourcedRefusalCode = { [C in RefusalCode]: Refusals[C] extends { readonly source: RefusalSource } ? C : never }[RefusalCode];

/** The codes whose refusal of a call is a recorded decision on it (a row whose source is a call's). */
export type RecordedRefusalCode = { [C in SourcedRefusalCode]: Refusals[C]["source"] extends CallDecisionSource ? C : never }[SourcedRefusalCode];

/** What a code's message is built from. */
export type RefusalMessageArgs<C extends RefusalCode> = Parameters<Refusals[C]["message"]>;

/** A code as read from a record or an answer: a row of the table, or undefined. */
export function parseRefusalCode(value: unknown): RefusalCode | undefined {
  return typeof value === "string" && Object.hasOwn(REFUSALS, value) ? (value as RefusalCode) : undefined;
}

/** The message of a refusal, from its row. */
export function buildRefusalMessage<C extends RefusalCode>(code: C, ...args: RefusalMessageArgs<C>): string {
  return (REFUSALS[code].message as (...a: RefusalMessageArgs<C>) => string)(...args);
}

/** The decision source of a recorded refusal, from its row. */
export function lookupRefusalSource<C extends SourcedRefusalCode>(code: C): Refusals[C]["source"] {
  return REFUSALS[code].source;
}

/** The HTTP status of a refusal the sidecar answers (a client's own has none: 503, as an unavailable sidecar). */
export function lookupRefusalStatus(code: RefusalCode): RefusalStatus {
  const row: RefusalRow = REFUSALS[code];
  return row.status ?? 503;
}

/** A refusal's body on a route other than a tool call's: `{decision: "deny", code, message}`. */
export function buildRefusalBody<C extends RefusalCode>(code: C, ...args: RefusalMessageArgs<C>): { decision: "deny"; code: C; message: string } {
  return { decision: "deny", code, message: buildRefusalMessage(code, ...args) };
}

/** Largest request body: a `write_file` content fits, an accidental (or hostile) flood does not. */
export const MAX_REQUEST_BODY_BYTES = 16 * 1024 * 1024;

/** Longest wait a client may ask for on `GET /v1/tool-calls/{id}?wait=`. */
export const MAX_WAIT_SECONDS = 300;

/** The header a client gives its deadline in (milliseconds since the epoch): past it, the call does not run. */
export const DEADLINE_HEADER = "leviath-deadline";

/** A deadline header's value: a time in milliseconds, or absent. */
export const DeadlineSchema = z.coerce.number().int().positive().optional();

const Name = z.string().min(1).max(256);

/** Where a result is stored in the runtime's context: its identity for labels and evictions. */
export interface EntryRef {
  readonly region: string;
  readonly id: string;
}

/** An {@link EntryRef} as a request carries it. */
export const EntryRefSchema = z.strictObject({ region: Name, id: Name });

/** `POST /v1/tool-calls`. */
export const ToolCallBodySchema = z.object({
  id: Name,
  tool: z.string().min(1).max(128),
  args: z.record(z.string(), z.unknown()).default({}),
  entry: EntryRefSchema.optional(),
});

/** The most text one entry (a reported result's `content`, a labelled entry's `text`) carries for argument provenance. */
export const MAX_ENTRY_TEXT_CHARS = 1_048_576;

/** `POST /v1/tool-calls/{id}/result`. */
export const ResultBodySchema = z.object({
  entry: EntryRefSchema.optional(),
  /** The result's text, for argument provenance (issue 40); without it an untrusted result counts as unseen (fails closed). */
  content: z.string().max(MAX_ENTRY_TEXT_CHARS).optional(),
}).default({});

/** `GET /v1/tool-calls/{id}?wait=SECONDS`. */
export const WaitQuerySchema = z.object({ wait: z.coerce.number().min(0).max(MAX_WAIT_SECONDS).default(0) });

/** `POST /v1/context/entries`: entries the runtime wrote; the sidecar picks their label. */
export const ContextEntriesBodySchema = z.strictObject({
  entries: z.array(z.strictObject({
    region: Name,
    id: Name,
    /** `model`: written by the model (labelled at the current taint); `input`: task text, user input, seeds (public). */
    source: z.enum(["model", "input"]),
    /** The entry's text, for argument provenance (issue 40): an input's is trusted text, a model write's has the context's integrity. */
    text: z.string().max(MAX_ENTRY_TEXT_CHARS).optional(),
  })).min(1).max(10_000),
});

/** `POST /v1/context/evictions`. */
export const EvictionsBodySchema = z.strictObject({
  entries: z.array(EntryRefSchema).max(10_000).default([]),
  regions: z.array(Name).max(1000).default([]),
});

/** `POST /v1/stage`. */
export const StageBodySchema = z.strictObject({ stage: Name });

/** `POST /v1/warnings`: what the runtime does not honour, one line each. */
export const WarningsBodySchema = z.strictObject({ warnings: z.array(z.string().min(1).max(4096)).min(1).max(256) });

/** The seed forms whose paths the fence covers (the first key present wins upstream; here exactly one is given). */
export const SeedSchema = z.union([
  z.strictObject({ files: z.array(z.string().min(1).max(4096)).min(1).max(MAX_READ_FILES) }),
  z.strictObject({ glob: z.string().min(1).max(4096) }),
  z.strictObject({ rhai: z.string().min(1).max(4096) }),
]);
/** A seed as the runtime sends it. */
export type Seed = z.infer<typeof SeedSchema>;

/** A command seed (`{ command = "..." }`): run in the entry stage's sandbox when the policy covers it. */
export const CommandSeedSchema = z.strictObject({ command: z.string().min(1).max(4096) });

/** `POST /v1/seeds`. */
export const SeedBodySchema = z.strictObject({
  region: Name,
  seed: z.union([...SeedSchema.options, CommandSeedSchema]),
  /** The context entry the content goes into: labelled by the sidecar with the label its sources deserve. */
  entry: EntryRefSchema.optional(),
});

/** `POST /v1/approvals/{id}` (standalone only). */
export const AnswerBodySchema = z.strictObject({ decision: z.enum(APPROVAL_DECISIONS), reason: z.string().max(4096).optional() });

/** The first issue of a failed parse, as `field: message`. */
export function formatZodIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return "invalid";
  return `${issue.path.join(".") || "body"}: ${issue.message}`;
}

/** A call the sidecar executed (file tools, shell): `POST /v1/tool-calls` 200. */
export interface AllowBody {
  readonly id: string;
  readonly tool: string;
  readonly decision: "allow";
  readonly result: string;
  /** The result is an error text (the call ran but failed, e.g. a missing file). */
  readonly isError: boolean;
  readonly entry: EntryRef;
  /** The label the sidecar gave the result. */
  readonly label: LevelName;
  /** The context taint after labelling it. */
  readonly taint: LevelName;
  readonly shell?: { readonly exitCode: number | null; readonly timedOut: boolean };
}

/** A call the runtime executes (200); it reports the result on `/v1/tool-calls/{id}/result`. */
export interface RunBody {
  readonly id: string;
  readonly tool: string;
  readonly decision: "run";
  readonly target?: string;
}

/** A refusal of a call: the row's status, the code, and the text the model is given as the tool result. */
export interface DenyBody {
  readonly id: string;
  readonly tool: string;
  readonly decision: "deny";
  readonly code: RefusalCode;
  /** The tool result for the model (`[denied] …`, `[blocked] …`, `[error] …`, `[unavailable] …`). */
  readonly message: string;
}

/** An allow as the client reads it (200). */
export const AllowAnswerSchema = z.object({ id: z.string(), tool: z.string(), decision: z.literal("allow"), result: z.string(), isError: z.boolean(), label: z.string(), taint: z.string() });
/** A run as the client reads it (200). */
export const RunAnswerSchema = z.object({ id: z.string(), tool: z.string(), decision: z.literal("run"), target: z.string().optional() });
/** An ask as the client reads it (202). */
export const AskAnswerSchema = z.object({ id: z.string(), tool: z.string(), decision: z.literal("ask"), approval: z.object({ id: z.string().min(1) }) });
/** A refusal as the client reads it, from any route: `{code, message}` (tool calls add `decision`, `id`, `tool`). */
export const RefusalAnswerSchema = z.object({ code: z.string().min(1), message: z.string() });
/** A tool call's refusal as the client reads it. */
export const DenyAnswerSchema = RefusalAnswerSchema.extend({ decision: z.literal("deny") });
/** `GET /v1/healthz`. */
export const HealthAnswerSchema = z.object({ status: z.literal("ok") });
/** `POST /v1/warnings`. */
export const WarningsAnswerSchema = z.object({ added: z.number().int(), kept: z.number().int(), omitted: z.number().int() });
/** `POST /v1/stage`. */
export const StageAnswerSchema = z.object({ stage: z.string(), index: z.number().int(), changed: z.boolean() });
/** `GET /v1/stage` (the fields the runtime uses). */
export const CurrentStageAnswerSchema = z.object({ stage: z.string(), index: z.number().int() });
/** `GET /v1/status` (the fields the runtime uses: whether a result was handed over). */
export const StatusAnswerSchema = z.object({ result: RunResultSchema.nullish() });
/** `GET /v1/context/entries`. */
export const EntriesAnswerSchema = z.object({ entries: z.array(z.object({ region: z.string(), id: z.string(), level: z.string() })) });
/** `POST /v1/context/entries`. */
export const LabelAnswerSchema = z.object({ labelled: z.array(z.object({ region: z.string(), id: z.string(), level: z.string() })), taint: z.string() });
/** `POST /v1/context/evictions`. */
export const EvictAnswerSchema = z.object({ evicted: z.number().int(), taint: z.string() });
/** `POST /v1/seeds` 200 (the fields the runtime uses). */
export const SeedFilledSchema = z.object({ content: z.string(), label: z.string(), taint: z.string() });
