// The built-in tools, one entry each: names, arguments (upstream's, as zod), what the model is told, MCP
// annotations, classification (taint-gate spec §2.1), default permission (§5.1), target (§3.3) and who executes
// the call. The MCP catalogue, the runtime's tool list, the policy defaults and the sidecar's dispatch all derive
// from this table: adding a built-in tool is one entry here (plus an executor if the sidecar runs it).
import { z } from "zod";
import type { LevelName, Permission } from "./common.ts";
import { hasControlChar, parseOutboundUrl } from "./outbound-url.ts";
import { MAX_RESULT_BYTES } from "./status.ts";

/** Which way a tool moves data; only `outbound` tools are ever gated. */
export type Direction = "inbound" | "internal" | "outbound";

/** A tool's `(sensitivity, direction, clearance)`. */
export interface ToolClassification {
  /** The label given to the tool's results. */
  readonly sensitivity: LevelName;
  readonly direction: Direction;
  /** The highest context taint the tool may run under; only meaningful for outbound tools. */
  readonly clearance: LevelName;
}

/**
 * How a call's target (for allowlist and CEL rules) is found: the host of its `url`, never, or (as for any tool
 * not built in) its single recipient (`to`/`recipient`, checked against `cc`/`bcc`) or its `channel`.
 */
export type TargetKind = "url_host" | "none" | "recipient_or_channel";

/**
 * Who runs a call: the sidecar (on files, in the sandbox's shell, over HTTP from its own container, through the
 * admin's search backend (an MCP server's tool, `webSearch` of the policy), or as the Run's result), or the runtime.
 */
export type ExecutorKind = "file" | "shell" | "http" | "search" | "result" | "runtime";

/** A metric class narrower than the tool's direction (the others are counted by direction). */
export type ToolMetricClass = "file_read" | "file_write" | "shell";

/** MCP's tool annotations, as the sidecar states them (its own claims, not a server's). */
export interface ToolAnnotations {
  readonly readOnlyHint: boolean;
  readonly destructiveHint: boolean;
  readonly idempotentHint: boolean;
  readonly openWorldHint: boolean;
}

interface ToolEntryBase {
  /** Other spellings of the tool: every permission lookup and classification treats them as the tool. */
  readonly aliases?: readonly string[];
  readonly classification: ToolClassification;
  /** The built-in permission when nothing is configured. */
  readonly permission: Exclude<Permission, "deny">;
  /** How the call's target is found; the rule of tools not built in when unset. */
  readonly target?: TargetKind;
  /** A blueprint may pre-allow the tool even when the user has not configured it (§5.2). */
  readonly blueprintMayAllow?: true;
  /** The metric class when narrower than the direction. */
  readonly metricClass?: ToolMetricClass;
}

/** A built-in the sidecar settles itself: its arguments, description and annotations are offered to the model. */
export interface SidecarToolEntry extends ToolEntryBase {
  readonly executor: Exclude<ExecutorKind, "runtime">;
  readonly args: z.ZodObject;
  readonly description: string;
  readonly annotations: ToolAnnotations;
}

/** A built-in the runtime executes itself (web, context, todo, agent tools): known to the policy by name. */
export interface RuntimeToolEntry extends ToolEntryBase {
  readonly executor: "runtime";
}

/** One built-in tool. */
export type BuiltinToolEntry = SidecarToolEntry | RuntimeToolEntry;

/** Most paths one `read_files` call may name. */
export const MAX_READ_FILES = 256;

/** The tool whose allowed call becomes the Run's result. */
export const RESULT_TOOL = "submit_output";

/** The model's choice of the next stage (the reference runtime's, and on `/mcp` the sidecar's), where a stage has `llm_choice` edges. */
export const NEXT_STAGE_TOOL = "next_stage";

/**
 * `next_stage` for a stage's `llm_choice` edges: `stage` is one of their targets, with their hints in the description;
 * `done` adds that choice (the reference runtime's DONE where the stage may complete).
 */
export function describeNextStageTool(edges: readonly { readonly to: string; readonly hint: string }[], done?: { readonly choice: string; readonly hint: string }) {
  const choices = [...edges.map((e) => e.to), ...(done ? [done.choice] : [])];
  return {
    name: NEXT_STAGE_TOOL,
    description: `Leave this stage for the next one. ${edges.map((e) => `${e.to}: ${e.hint || "(no hint)"}`).join("; ")}${done ? `; ${done.choice}: ${done.hint}` : ""}`,
    inputSchema: { type: "object" as const, properties: { stage: { type: "string", enum: choices }, reason: { type: "string" } }, required: ["stage"], additionalProperties: false },
  };
}

const cls = (sensitivity: LevelName, direction: Direction, clearance: LevelName): ToolClassification =>
  Object.freeze({ sensitivity, direction, clearance });

const OUTBOUND = cls("public", "outbound", "public");
const READS_FILES = cls("internal", "inbound", "public");
const LOCAL = cls("internal", "internal", "public");
const PUBLIC_FACTS = cls("public", "inbound", "public");
const HOST_FACTS = cls("internal", "inbound", "public");

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

const path = z.string().describe("The file's path (a relative path resolves against the workdir)");

/** The URL of an outbound built-in, read by parseOutboundUrl: the normalised href is what is decided on and fetched. */
const url = z.string().describe("An absolute http or https URL (no user:password@)").transform((text, ctx) => {
  const parsed = parseOutboundUrl(text);
  if (parsed.ok) return parsed.href;
  ctx.addIssue({ code: "custom", message: parsed.reason });
  return z.NEVER;
});

/** Most request headers an HTTP tool sends. */
export const MAX_REQUEST_HEADERS = 32;
/** Headers the sidecar sets itself (framing, the host the gate decided on, hop-by-hop): a call never names them. */
const RESERVED_HEADERS = new Set(["host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer", "expect"]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
const headers = z.record(z.string(), z.string()).optional().describe("Request headers (name: value)").superRefine((h, ctx) => {
  const names = Object.keys(h ?? {});
  if (names.length > MAX_REQUEST_HEADERS) ctx.addIssue({ code: "custom", message: `at most ${MAX_REQUEST_HEADERS} headers` });
  for (const [name, value] of Object.entries(h ?? {})) {
    if (!HEADER_NAME.test(name)) ctx.addIssue({ code: "custom", message: `'${name.slice(0, 64)}' is not a header name` });
    else if (RESERVED_HEADERS.has(name.toLowerCase()) || name.toLowerCase().startsWith("proxy-")) ctx.addIssue({ code: "custom", message: `the header '${name}' is set by the sidecar, never by a call` });
    else if (value.length > 4096 || hasControlChar(value, false)) ctx.addIssue({ code: "custom", message: `the value of '${name}' holds a control character or passes 4096 characters` });
  }
});

// Not read-only: a GET's URL can carry data out as well as a POST's body (the gate treats both as outbound).
const OUTBOUND_GET: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true };

const OUTBOUND_NOTE = "The body comes back as text (status and headers first), cut at 900 KB; a redirect is followed only on the same host. It can carry data out, so it is taint-gated.";

const runtime = (classification: ToolClassification, permission: "allow" | "ask", more: Partial<RuntimeToolEntry> = {}): RuntimeToolEntry =>
  ({ executor: "runtime", classification, permission, ...more });

/** Every built-in tool by canonical name; the sidecar's tools first, in the order `tools/list` offers them. */
export const BUILTIN_TOOLS = {
  read_file: {
    executor: "file", classification: READS_FILES, permission: "allow", metricClass: "file_read", annotations: READ_ONLY,
    description: "Read a text file (a path in the workdir or under a granted read path).",
    args: z.object({ path }),
  },
  read_files: {
    executor: "file", classification: READS_FILES, permission: "allow", metricClass: "file_read", annotations: READ_ONLY,
    description: `Read up to ${MAX_READ_FILES} text files at once.`,
    args: z.object({ paths: z.array(z.string()).min(1).max(MAX_READ_FILES).describe("The files' paths") }),
  },
  list_dir: {
    executor: "file", classification: READS_FILES, permission: "allow", metricClass: "file_read", annotations: READ_ONLY,
    description: "List a directory's entries (directories end in /).",
    args: z.object({ path: z.string().default(".").describe("The directory (default .)") }),
  },
  write_file: {
    executor: "file", classification: LOCAL, permission: "ask", metricClass: "file_write",
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    description: "Write a file in the workdir, replacing it and creating missing directories.",
    args: z.object({ path, content: z.string().describe("The whole new content") }),
  },
  edit_file: {
    executor: "file", classification: LOCAL, permission: "ask", metricClass: "file_write",
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    description: "Replace one exact occurrence of old_str with new_str in a workdir file.",
    args: z.object({ path, old_str: z.string().describe("Text that occurs exactly once"), new_str: z.string().describe("Its replacement") }),
  },
  shell: {
    executor: "shell", aliases: ["bash"], classification: OUTBOUND, permission: "ask", target: "none", metricClass: "shell",
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    description: "Run a shell command in the stage's sandbox; returns stdout, stderr and the exit code. Its output can reach the network, so it is taint-gated.",
    args: z.object({ command: z.string().min(1).describe("The command line (sh -c)") }),
  },
  [RESULT_TOOL]: {
    // Upstream applies it inline and never asks: resolving it like any tool (so a `deny` takes effect) must
    // not start prompting for every submitted answer.
    executor: "result", classification: OUTBOUND, permission: "allow", target: "none",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    description: `Hand over the run's final answer (at most ${MAX_RESULT_BYTES.toLocaleString("en")} bytes); call it once the answer is complete. It leaves the machine, so it is taint-gated like any outbound call.`,
    args: z.object({ output: z.string().describe("The final answer") }),
  },
  web_fetch: {
    executor: "http", classification: OUTBOUND, permission: "ask", target: "url_host", blueprintMayAllow: true, annotations: OUTBOUND_GET,
    description: `Fetch a web page (GET) from the sidecar. ${OUTBOUND_NOTE}`,
    args: z.object({ url }),
  },
  http_get: {
    executor: "http", classification: OUTBOUND, permission: "ask", target: "url_host", annotations: OUTBOUND_GET,
    description: `Send an HTTP GET with optional headers. ${OUTBOUND_NOTE}`,
    args: z.object({ url, headers }),
  },
  http_post: {
    executor: "http", classification: OUTBOUND, permission: "ask", target: "url_host",
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    description: `Send an HTTP POST with a body (sent as JSON when it parses as JSON, else as text, unless a content-type header says otherwise). ${OUTBOUND_NOTE}`,
    args: z.object({ url, body: z.string().describe("The request body"), headers }),
  },
  web_search: {
    // Offered only where the policy names a backend (webSearch) and the stage or a policy map names the tool.
    executor: "search", classification: OUTBOUND, permission: "ask", target: "none", blueprintMayAllow: true, annotations: OUTBOUND_GET,
    description: "Search the web through the search service the administrator configured; returns its results (typically title, url, snippet, date for each). The query leaves the machine, so it is taint-gated.",
    args: z.object({
      query: z.string().min(1).max(2048).describe("The search query"),
      count: z.number().int().min(1).max(50).default(5).describe("How many results (default 5)"),
      freshness: z.string().min(1).max(64).optional().describe("How recent the results must be, as the search service reads it (e.g. day, week, month)"),
    }),
  },
  fetch: runtime(OUTBOUND, "ask", { target: "url_host" }),
  install_tool: runtime(LOCAL, "ask"),
  edit_document: runtime(LOCAL, "allow"),
  context_write: runtime(LOCAL, "allow"),
  context_append: runtime(LOCAL, "allow"),
  context_read: runtime(LOCAL, "allow"),
  context_delete: runtime(LOCAL, "allow"),
  context_list: runtime(LOCAL, "allow"),
  todo_add: runtime(LOCAL, "allow"),
  todo_done: runtime(LOCAL, "allow"),
  todo_note: runtime(LOCAL, "allow"),
  current_time: runtime(PUBLIC_FACTS, "allow"),
  locale_info: runtime(PUBLIC_FACTS, "allow"),
  system_info: runtime(HOST_FACTS, "allow"),
  environment_info: runtime(HOST_FACTS, "allow"),
  which_command: runtime(HOST_FACTS, "allow"),
  runtime_info: runtime(HOST_FACTS, "allow"),
  ask_user_text: runtime(LOCAL, "allow"),
  ask_user_choice: runtime(LOCAL, "allow"),
  ask_user_confirm: runtime(LOCAL, "allow"),
  present_for_review: runtime(LOCAL, "ask"),
  spawn_agent: runtime(LOCAL, "allow"),
  check_agent: runtime(LOCAL, "allow"),
  wait_for_agent: runtime(LOCAL, "allow"),
  send_to_agent: runtime(LOCAL, "allow"),
  kill_agent: runtime(LOCAL, "allow"),
  // Applied inline upstream and never asked about, like submit_output.
  fan_out: runtime(LOCAL, "allow"),
} satisfies Readonly<Record<string, BuiltinToolEntry>>;

type Builtins = typeof BUILTIN_TOOLS;

/** The canonical name of a built-in tool. */
export type BuiltinToolName = keyof Builtins;

/** The built-ins a given executor runs, by canonical name. */
export type ToolsOf<E extends ExecutorKind> = { [K in BuiltinToolName]: Builtins[K]["executor"] extends E ? K : never }[BuiltinToolName];

/** A built-in tool together with its canonical name. */
export type NamedToolEntry = BuiltinToolEntry & { readonly name: string };

/** Every built-in, in table order. */
export const BUILTIN_TOOL_LIST: readonly NamedToolEntry[] = Object.entries(BUILTIN_TOOLS).map(([name, e]) => ({ name, ...e }));

const BY_SPELLING: ReadonlyMap<string, NamedToolEntry> = new Map(
  BUILTIN_TOOL_LIST.flatMap((e) => [e.name, ...(e.aliases ?? [])].map((spelling) => [spelling, e] as const)),
);

/** The built-in a name spells (its canonical name or an alias; exact and case-sensitive), if any. */
export function findBuiltinTool(name: string): NamedToolEntry | undefined {
  return BY_SPELLING.get(name);
}

/** Every spelling of a built-in (canonical names and aliases), in table order. */
export const BUILTIN_TOOL_SPELLINGS: readonly string[] = [...BY_SPELLING.keys()];

/** The spellings (canonical and aliases) of the built-ins that satisfy `pick`, in table order. */
export function listToolSpellings(pick: (e: NamedToolEntry) => boolean): string[] {
  return BUILTIN_TOOL_SPELLINGS.filter((s) => pick(BY_SPELLING.get(s)!));
}

/** The canonical names of the built-ins an executor runs, in table order. */
export function listToolsOf<E extends ExecutorKind>(executor: E): ToolsOf<E>[] {
  return BUILTIN_TOOL_LIST.filter((e) => e.executor === executor).map((e) => e.name as ToolsOf<E>);
}

/** What a model is told about a built-in: its name as called, description, JSON Schema and annotations. */
export interface BuiltinToolSpec {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: { readonly type: "object" } & Record<string, unknown>;
  readonly annotations: ToolAnnotations;
}

function toInputSchema(args: z.ZodObject): BuiltinToolSpec["inputSchema"] {
  // `io: "input"`: defaults (list_dir's path) make a field optional for the caller.
  const { $schema: _, ...json } = z.toJSONSchema(args, { io: "input" }) as Record<string, unknown>;
  return { ...json, type: "object" };
}

/** The specs of the sidecar's built-ins by canonical name, computed once: they never change. */
const SPECS: ReadonlyMap<string, BuiltinToolSpec> = new Map(
  BUILTIN_TOOL_LIST.flatMap((e) => e.executor === "runtime" ? [] : [[e.name, {
    name: e.name, description: e.description, inputSchema: toInputSchema(e.args), annotations: e.annotations,
  }] as const]),
);

/** The spec of a built-in the sidecar settles, under the spelling called (an alias is offered as itself). */
export function describeBuiltinTool(name: string): BuiltinToolSpec | undefined {
  const entry = findBuiltinTool(name);
  const spec = entry === undefined ? undefined : SPECS.get(entry.name);
  return spec === undefined || spec.name === name ? spec : { ...spec, name };
}

/** The specs of every built-in the sidecar settles, by canonical name, in table order. */
export function listBuiltinToolSpecs(): readonly BuiltinToolSpec[] {
  return [...SPECS.values()];
}
