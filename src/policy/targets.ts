// Target extraction (DESIGN.md §5; taint-gate spec §3.3 sidecar note). Upstream never passes a target
// to the live gate, so target-scoped allowlist rules only ever matched in `lev policy test`. We extract
// one per tool, and fail closed: anything ambiguous or unparseable is "no target", which never
// matches a target-scoped rule (and CEL rules see `target == ""`). Which rule a built-in follows is its
// `target` in api/tools.ts:
//
//   url_host (web_fetch, http_get, ...)    host of the `url` argument (http/https only, WHATWG-normalised)
//   none (web_search, shell, ...)          none
//   any other tool with `to` / `recipient`  the single recipient (also checked against `cc` / `bcc`)
//   any other tool with `channel`           the channel string
import { listToolSpellings } from "../api/tools.ts";

/** The arguments of a tool call as decoded from JSON. */
export type ToolArgs = Readonly<Record<string, unknown>>;

/** Tools whose target is the host of their `url` argument (any spelling). */
export const HTTP_TOOLS: ReadonlySet<string> = new Set(listToolSpellings((e) => e.target === "url_host"));

/** Tools that never have a target (any spelling). */
export const TARGETLESS_TOOLS: ReadonlySet<string> = new Set(listToolSpellings((e) => e.target === "none"));

const RECIPIENT_KEYS = ["to", "recipient", "cc", "bcc"] as const;

/** The host of an http(s) URL, lower-cased and IDNA-encoded by the URL parser; undefined otherwise. */
export function extractUrlHost(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const url = URL.parse(value);
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) return undefined;
  return url.hostname === "" ? undefined : url.hostname;
}

/** Strings of one argument: a string, or an array of strings; anything else is `invalid`. */
function argStrings(value: unknown): readonly string[] | "invalid" {
  if (value === undefined || value === null) return [];
  if (typeof value === "string") return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value;
  return "invalid";
}

/** The single recipient of a mail-like call; several distinct recipients or a bad shape is undefined. */
function extractRecipient(args: ToolArgs): string | undefined {
  const recipients = new Set<string>();
  for (const key of RECIPIENT_KEYS) {
    const values = argStrings(args[key]);
    if (values === "invalid") return undefined;
    for (const v of values) recipients.add(v);
  }
  // One target string cannot stand for two recipients: a rule allowing one must not carry the other.
  if (recipients.size !== 1) return undefined;
  const [only] = recipients;
  return only === "" ? undefined : only;
}

function hasArg(args: ToolArgs, key: string): boolean {
  return Object.hasOwn(args, key) && args[key] !== undefined && args[key] !== null;
}

/** The call's target for allowlist and CEL rules, or undefined when it has none (see the table above). */
export function extractTarget(tool: string, args: ToolArgs): string | undefined {
  if (HTTP_TOOLS.has(tool)) return extractUrlHost(args["url"]);
  if (TARGETLESS_TOOLS.has(tool)) return undefined;
  const mailLike = hasArg(args, "to") || hasArg(args, "recipient");
  const chatLike = hasArg(args, "channel");
  // A call naming both a recipient and a channel could send to either: no single target describes it.
  if (mailLike && chatLike) return undefined;
  if (mailLike) return extractRecipient(args);
  if (chatLike) {
    const channel = args["channel"];
    return typeof channel === "string" && channel !== "" ? channel : undefined;
  }
  return undefined;
}
