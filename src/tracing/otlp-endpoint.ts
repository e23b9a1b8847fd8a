// The OTLP/HTTP traces endpoint a sidecar or runtime exports to, checked without loading OpenTelemetry (a flag or
// an environment variable is checked at start, tracing on or not).

/** Checks an OTLP/HTTP endpoint: an http(s) URL; its path is kept as given (`/v1/traces` is OTLP's). */
export function parseOtlpEndpoint(text: string): { ok: true; url: string } | { ok: false; error: string } {
  if (!URL.canParse(text)) return { ok: false, error: `'${text}' is not a URL` };
  const url = new URL(text);
  if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, error: `'${text}' is not an http(s) URL` };
  if (url.username !== "" || url.password !== "") return { ok: false, error: `'${text}' carries credentials: an endpoint is logged and shown in pod specs` };
  return { ok: true, url: url.pathname === "/" ? new URL("/v1/traces", url).href : url.href };
}
