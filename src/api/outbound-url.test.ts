import { describe, expect, it } from "vitest";
import { MAX_OUTBOUND_URL_CHARS, parseOutboundUrl } from "./outbound-url.ts";
import { BUILTIN_TOOLS } from "./tools.ts";

// What the HTTP tools accept as a URL and what they refuse: everything a reader (a person at the prompt, an
// allowlist pattern) could take for another host than the one the sidecar would connect to.
describe("the URL of an outbound built-in", () => {
  it.each([
    ["a plain https URL", "https://api.example.com/v1?q=1#top", "https://api.example.com/v1?q=1#top", "api.example.com"],
    ["upper case is lowered", "HTTPS://API.Example.COM/x", "https://api.example.com/x", "api.example.com"],
    ["a port stays in the URL, not in the host", "http://hooks.internal:8080/x", "http://hooks.internal:8080/x", "hooks.internal"],
    ["an IDN host becomes punycode", "http://bücher.de/", "http://xn--bcher-kva.de/", "xn--bcher-kva.de"],
    ["a dotted-quad IPv4 address", "http://93.184.216.34/", "http://93.184.216.34/", "93.184.216.34"],
    ["an IPv6 address", "http://[2606:4700::1111]:80/", "http://[2606:4700::1111]/", "[2606:4700::1111]"],
    ["a path is normalised", "https://example.com/a/../b", "https://example.com/b", "example.com"],
  ])("accepts %s", (_name, text, href, host) => {
    expect(parseOutboundUrl(text)).toEqual({ ok: true, href, host });
  });

  it.each([
    ["userinfo", "https://good.example.com@evil.example/", "userinfo"],
    ["a user and password", "https://u:p@example.com/", "userinfo"],
    ["an empty userinfo", "https://@example.com/", "userinfo"],
    ["another scheme", "file:///etc/passwd", "only http and https"],
    ["ftp", "ftp://files.example.com/x", "only http and https"],
    ["javascript:", "javascript:alert(1)", "only http and https"],
    ["no scheme", "example.com/page", "not an absolute URL"],
    ["one slash (the parser would invent the host)", "http:/example.com/", "needs a host"],
    ["no slash", "http:example.com", "needs a host"],
    ["no host", "http:///path", "needs a host"],
    ["a trailing dot", "https://example.com./", "ending in a dot"],
    ["a percent-encoded host", "http://ex%61mple.com/", "percent-encoded host"],
    ["a hex IPv4 address", "http://0x7f.0.0.1/", "four decimal numbers"],
    ["a decimal IPv4 address", "http://2130706433/", "four decimal numbers"],
    ["a short IPv4 address", "http://127.1/", "four decimal numbers"],
    ["a backslash (read as /)", "http://evil.example\\@good.example/", "backslash"],
    ["a tab (dropped by the parser)", "http://exa\tmple.com/", "whitespace"],
    ["a newline", "http://example.com/\nHost: x", "whitespace"],
    ["a space", "http://example.com /", "whitespace"],
    ["garbage", "not a url", "whitespace"],
    ["a URL too long", `https://example.com/${"a".repeat(MAX_OUTBOUND_URL_CHARS)}`, `at most ${MAX_OUTBOUND_URL_CHARS}`],
  ])("refuses %s", (_name, text, why) => {
    const r = parseOutboundUrl(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain(why);
  });

  it("refuses through the tools' argument schema, naming the reason", () => {
    const r = BUILTIN_TOOLS.http_get.args.safeParse({ url: "https://u:p@example.com/" });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]).toMatchObject({ path: ["url"], message: expect.stringContaining("userinfo") });
    expect(BUILTIN_TOOLS.web_fetch.args.parse({ url: "HTTP://Example.com" })).toEqual({ url: "http://example.com/" });
  });

  it.each([
    [{ Host: "evil.example" }, "set by the sidecar"],
    [{ "Content-Length": "1" }, "set by the sidecar"],
    [{ "Proxy-Authorization": "x" }, "set by the sidecar"],
    [{ "bad name": "x" }, "not a header name"],
    [{ "x-a": "line\r\nInjected: 1" }, "control character"],
    [Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`x-${i}`, "v"])), "at most 32 headers"],
  ])("refuses the request headers %j", (headers, why) => {
    const r = BUILTIN_TOOLS.http_post.args.safeParse({ url: "https://example.com/", body: "", headers });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.message).join("; ")).toContain(why);
  });
});
