// Target extraction (DESIGN.md §5; taint-gate spec §3.3 sidecar note). Upstream never passes a target
// to the live gate, so target-scoped allowlist rules only ever matched in `lev policy test`. We extract
// a call's targets (where it would act: a host, a recipient, a channel), and fail closed: anything
// unparseable means no target at all, which never matches a target-scoped rule (and CEL rules see
// `target == ""` and `targets == []`). Which rule a built-in follows is its `target` in api/tools.ts;
// an admin declares the rule of any other tool (an MCP server's, a script tool) in its override's `target`:
//
//   declared (a tool not built in)          the values of the arguments the admin named (or their URLs' hosts)
//   url_host (web_fetch, http_get, ...)    host of the `url` argument as the tool reads it (api/outbound-url.ts)
//   none (web_search, shell, ...)          none
//   any other tool with `to` / `recipient`  every recipient in `to`, `recipient`, `cc`, `bcc`
//   any other tool with `channel`           the channel string
//
// A call has a list of targets; its single `target` is set only when the list has exactly one.
import { parseOutboundUrl } from "../api/outbound-url.ts";
import { listToolSpellings } from "../api/tools.ts";

/** The arguments of a tool call as decoded from JSON. */
export type ToolArgs = Readonly<Record<string, unknown>>;

/** How a declared target argument is read: its value as it is, or the host of the URL it holds. */
export type TargetValueKind = "value" | "url_host";

/** Which arguments of a tool name where it acts, as an admin declared them (`target` of a tool override). */
export interface ToolTargetRule {
  readonly arguments: readonly string[];
  readonly kind: TargetValueKind;
}

/** Where a call would act: every distinct target in argument order, and the single one when there is exactly one. */
export interface CallTargets {
  readonly target: string | undefined;
  readonly targets: readonly string[];
}

const NO_TARGETS: CallTargets = Object.freeze({ target: undefined, targets: Object.freeze([]) as readonly string[] });

/** Tools whose target is the host of their `url` argument (any spelling). */
export const HTTP_TOOLS: ReadonlySet<string> = new Set(listToolSpellings((e) => e.target === "url_host"));

/** Tools that never have a target (any spelling). */
export const TARGETLESS_TOOLS: ReadonlySet<string> = new Set(listToolSpellings((e) => e.target === "none"));

const RECIPIENT_KEYS = ["to", "recipient", "cc", "bcc"] as const;

/** A URL's scheme, as the WHATWG parser would read one. */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/**
 * The host of an http(s) URL, lower-cased and IDNA-encoded by the URL parser; undefined otherwise. With
 * `schemeless`, a value without a scheme (`www.example.com/page`, as many MCP servers' tools take) is read as
 * `http://` followed by it; a value with any other scheme is still none.
 */
export function extractUrlHost(value: unknown, opts: { readonly schemeless?: boolean } = {}): string | undefined {
  if (typeof value !== "string") return undefined;
  const text = opts.schemeless === true && !SCHEME.test(value) ? `http://${value}` : value;
  const url = URL.parse(text);
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) return undefined;
  return url.hostname === "" ? undefined : url.hostname;
}

/** The host of an HTTP tool's `url` as the tool reads it (api/outbound-url.ts): none when the tool would refuse it. */
function readToolUrlHost(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const parsed = parseOutboundUrl(value);
  return parsed.ok ? parsed.host : undefined;
}

/** Strings of one argument: a string, or an array of strings; anything else is `invalid`. */
function argStrings(value: unknown): readonly string[] | "invalid" {
  if (value === undefined || value === null) return [];
  if (typeof value === "string") return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value;
  return "invalid";
}

/** The distinct values of `keys` read by `read` (each an argument's string or strings); one unreadable value is none at all. */
function collectTargets(args: ToolArgs, keys: readonly string[], read: (value: string) => string | undefined): CallTargets {
  const targets = new Set<string>();
  for (const key of keys) {
    const values = argStrings(Object.hasOwn(args, key) ? args[key] : undefined);
    if (values === "invalid") return NO_TARGETS;
    for (const v of values) {
      const t = read(v);
      // A target we cannot read could be anywhere: no rule may allow the call by its other targets.
      if (t === undefined || t === "") return NO_TARGETS;
      targets.add(t);
    }
  }
  const list = [...targets];
  return { target: list.length === 1 ? list[0] : undefined, targets: list };
}

function single(target: string | undefined): CallTargets {
  return target === undefined ? NO_TARGETS : { target, targets: [target] };
}

function hasArg(args: ToolArgs, key: string): boolean {
  return Object.hasOwn(args, key) && args[key] !== undefined && args[key] !== null;
}

const asIs = (v: string): string => v;
const hostOf = (v: string): string | undefined => extractUrlHost(v, { schemeless: true });

/** The call's targets for allowlist and CEL rules (see the table above); `declared` is the admin's rule for the tool. */
export function extractCallTargets(tool: string, args: ToolArgs, declared?: ToolTargetRule): CallTargets {
  if (declared !== undefined) return collectTargets(args, declared.arguments, declared.kind === "url_host" ? hostOf : asIs);
  if (HTTP_TOOLS.has(tool)) return single(readToolUrlHost(args["url"]));
  if (TARGETLESS_TOOLS.has(tool)) return NO_TARGETS;
  const mailLike = hasArg(args, "to") || hasArg(args, "recipient");
  const chatLike = hasArg(args, "channel");
  // A call naming both a recipient and a channel could send to either: no target describes it.
  if (mailLike && chatLike) return NO_TARGETS;
  if (mailLike) return collectTargets(args, RECIPIENT_KEYS, asIs);
  if (chatLike) {
    const channel = args["channel"];
    return single(typeof channel === "string" && channel !== "" ? channel : undefined);
  }
  return NO_TARGETS;
}

/** The call's single target, or undefined when it has none or several (see {@link extractCallTargets}). */
export function extractTarget(tool: string, args: ToolArgs, declared?: ToolTargetRule): string | undefined {
  return extractCallTargets(tool, args, declared).target;
}

/** The arguments a call's targets are read from (see {@link extractCallTargets}): those the argument provenance of its targets is checked on. */
export function listTargetArguments(tool: string, args: ToolArgs, declared?: ToolTargetRule): readonly string[] {
  if (declared !== undefined) return declared.arguments;
  if (HTTP_TOOLS.has(tool)) return ["url"];
  if (TARGETLESS_TOOLS.has(tool)) return [];
  return [...RECIPIENT_KEYS, "channel"].filter((key) => hasArg(args, key));
}
