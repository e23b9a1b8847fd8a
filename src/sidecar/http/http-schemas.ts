// Request bodies of the sidecar's API, parsed with zod at the boundary (STYLE.md rule 1).
import { z } from "zod";
import { APPROVAL_DECISIONS } from "../../api/approval.ts";

/** Largest request body: a `write_file` content fits, an accidental (or hostile) flood does not. */
export const MAX_REQUEST_BODY_BYTES = 16 * 1024 * 1024;

/** Longest wait a client may ask for on `GET /v1/tool-calls/{id}?wait=`. */
export const MAX_WAIT_SECONDS = 300;

/** The header a client gives its deadline in (milliseconds since the epoch): past it, the call does not run. */
export const DEADLINE_HEADER = "leviath-deadline";

/** A deadline header's value: a time in milliseconds, or absent. */
export const DeadlineSchema = z.coerce.number().int().positive().optional();

const Name = z.string().min(1).max(256);

/** Where a result lives in the runtime's context. */
export const EntryRefSchema = z.strictObject({ region: Name, id: Name });

/** `POST /v1/tool-calls`. */
export const ToolCallBodySchema = z.object({
  id: Name,
  tool: z.string().min(1).max(128),
  args: z.record(z.string(), z.unknown()).default({}),
  entry: EntryRefSchema.optional(),
});

/** `POST /v1/tool-calls/{id}/result`. */
export const ResultBodySchema = z.object({ entry: EntryRefSchema.optional() }).default({});

/** `GET /v1/tool-calls/{id}?wait=SECONDS`. */
export const WaitQuerySchema = z.object({ wait: z.coerce.number().min(0).max(MAX_WAIT_SECONDS).default(0) });

/** `POST /v1/context/entries`: entries the runtime wrote; the sidecar picks their label. */
export const ContextEntriesBodySchema = z.strictObject({
  entries: z.array(z.strictObject({
    region: Name,
    id: Name,
    /** `model`: written by the model (labelled at the current taint); `input`: task text, user input, seeds (public). */
    source: z.enum(["model", "input"]),
  })).min(1).max(10_000),
});

/** `POST /v1/context/evictions`. */
export const EvictionsBodySchema = z.strictObject({
  entries: z.array(EntryRefSchema).max(10_000).default([]),
  regions: z.array(Name).max(1000).default([]),
});

/** `POST /v1/stage`. */
export const StageBodySchema = z.strictObject({ stage: Name });

/** `POST /v1/approvals/{id}` (standalone only). */
export const AnswerBodySchema = z.strictObject({ decision: z.enum(APPROVAL_DECISIONS), reason: z.string().max(4096).optional() });

/** The first issue of a failed parse, as `field: message`. */
export function formatZodIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return "invalid";
  return `${issue.path.join(".") || "body"}: ${issue.message}`;
}
