// The URL of an outbound built-in (`web_fetch`, `http_get`, `http_post`), read once: the gate matches its host,
// the permission prompt shows it, and the sidecar fetches exactly it (the parsed, normalised href), so what the
// policy decided on and what goes on the wire can never differ. Anything a reader could take for another host is
// refused rather than normalised behind the reader's back; docs/taint-and-permissions.md lists the refusals.

/** Longest URL an outbound built-in accepts. */
export const MAX_OUTBOUND_URL_CHARS = 8192;

/** A URL read for an outbound call: the href fetched and its host (lower-cased, IDNA-encoded), or why it is refused. */
export type OutboundUrl = { readonly ok: true; readonly href: string; readonly host: string } | { readonly ok: false; readonly reason: string };

/** The authority of a URL as written: what lies between `scheme://` and the next `/`, `?` or `#`. */
const AUTHORITY = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)/;
/** Characters the URL parser drops or rewrites silently (whitespace, `\` read as `/`); controls are checked apart. */
const REWRITTEN = /[\s\\]/;
const DOTTED_QUAD = /^\d{1,3}(\.\d{1,3}){3}$/;

/** Whether a text holds a control character (C0, with tab when `tabToo`, or DEL). */
export function hasControlChar(text: string, tabToo = true): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && (tabToo || c !== 0x09)) || c === 0x7f) return true;
  }
  return false;
}

function refuse(reason: string): OutboundUrl {
  return { ok: false, reason };
}

/** What the authority as written says about its host, when it would mislead: its port stripped, any `[...]` kept. */
function checkAuthority(authority: string, host: string): string | undefined {
  if (authority.includes("@")) return "a URL with userinfo (user:password@) is refused: the host is what follows the @, which a reader may miss";
  if (authority.includes("%")) return "a percent-encoded host is refused: write the host as it is";
  const written = authority.replace(/:\d*$/, "").toLowerCase();
  // Another spelling of an IPv4 address (0x7f.1, 2130706433, 127.1) reaches the same machine as the dotted quad.
  if (DOTTED_QUAD.test(host) && written !== host) return `an IPv4 address is accepted only as four decimal numbers (${host}), not '${written}'`;
  return undefined;
}

/**
 * Reads the URL of an outbound call: http or https only, a host of its own, no userinfo, no percent-encoded host,
 * no trailing dot, no character the parser would drop or rewrite, an IPv4 address only as a dotted quad.
 */
export function parseOutboundUrl(text: string): OutboundUrl {
  if (text.length > MAX_OUTBOUND_URL_CHARS) return refuse(`a URL is at most ${MAX_OUTBOUND_URL_CHARS} characters`);
  if (REWRITTEN.test(text) || hasControlChar(text)) return refuse("a URL with whitespace, control characters or a backslash is refused (the URL parser would drop or rewrite them)");
  const url = URL.parse(text);
  if (url === null) return refuse(`'${text}' is not an absolute URL`);
  if (url.protocol !== "http:" && url.protocol !== "https:") return refuse(`only http and https URLs are fetched, not '${url.protocol.slice(0, -1)}'`);
  const authority = AUTHORITY.exec(text)?.[1];
  // `http:/x`, `http:x` and `http:///x` parse with the host `x`: the host must be written where a reader looks for it.
  if (authority === undefined || authority === "" || url.hostname === "") return refuse("a URL needs a host (http://host/...)");
  const misleading = checkAuthority(authority, url.hostname);
  if (misleading !== undefined) return refuse(misleading);
  if (url.hostname.endsWith(".")) return refuse("a host ending in a dot is refused: write it without the dot");
  return { ok: true, href: url.href, host: url.hostname };
}
