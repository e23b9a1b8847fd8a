import { describe, expect, it } from "vitest";
import { extractCallTargets, extractTarget, extractUrlHost, type ToolTargetRule } from "./targets.ts";

describe("extractTarget", () => {
  it.each<[string, string, Record<string, unknown>, string | undefined]>([
    // HTTP-like tools: the URL's host
    ["web_fetch host", "web_fetch", { url: "https://api.example.com/v1?q=1" }, "api.example.com"],
    ["http_get drops the port", "http_get", { url: "http://hooks.internal:8080/x" }, "hooks.internal"],
    ["http_post lower-cases", "http_post", { url: "HTTPS://API.Example.COM/" }, "api.example.com"],
    // A URL the HTTP tools refuse (api/outbound-url.ts) has no target: the call never runs, and no rule matches it.
    ["userinfo has none (the tools refuse it)", "fetch", { url: "https://evil.com@good.example.com/" }, undefined],
    ["a trailing dot has none", "http_get", { url: "https://example.com./" }, undefined],
    ["a hex IPv4 host has none", "http_get", { url: "http://0x7f.1/" }, undefined],
    ["a percent-encoded host has none", "web_fetch", { url: "http://ex%61mple.com/" }, undefined],
    ["a backslash has none", "web_fetch", { url: "http://evil.example\\@good.example/" }, undefined],
    ["IDNA host is punycode", "web_fetch", { url: "http://bücher.de/" }, "xn--bcher-kva.de"],
    ["non-http scheme has none", "web_fetch", { url: "file:///etc/passwd" }, undefined],
    ["unparseable URL has none", "web_fetch", { url: "not a url" }, undefined],
    ["a non-string URL has none", "http_get", { url: 42 }, undefined],
    ["missing URL has none", "http_post", { body: "x" }, undefined],
    ["HTTP tools ignore `to`", "http_post", { to: "a@b.c" }, undefined],
    // tools without a target
    ["web_search has none", "web_search", { query: "x", to: "a@b.c" }, undefined],
    ["shell has none", "shell", { command: "curl https://x.example.com", to: "a@b.c" }, undefined],
    ["bash has none", "bash", { command: "ls" }, undefined],
    ["submit_output has none", "submit_output", { output: "done", channel: "#x" }, undefined],
    // mail-like tools
    ["to string", "send_email", { to: "megan@work.com", subject: "hi" }, "megan@work.com"],
    ["recipient", "srv__send_message", { recipient: "+17576306267" }, "+17576306267"],
    ["single-element to list", "send_email", { to: ["ops@corp"] }, "ops@corp"],
    ["the same recipient twice is one", "send_email", { to: "ops@corp", recipient: "ops@corp" }, "ops@corp"],
    ["two recipients have no single target", "send_email", { to: ["ops@corp", "evil@x.com"] }, undefined],
    ["a cc makes it two", "send_email", { to: "ops@corp", cc: "evil@x.com" }, undefined],
    ["a bcc list makes it two", "send_email", { to: "ops@corp", bcc: ["evil@x.com"] }, undefined],
    ["a non-string recipient has none", "send_email", { to: { name: "x" } }, undefined],
    ["an empty recipient has none", "send_email", { to: "" }, undefined],
    // chat-like tools
    ["channel", "post_to_slack", { channel: "#team-standup", text: "x" }, "#team-standup"],
    ["non-string channel has none", "post_to_slack", { channel: 7 }, undefined],
    ["recipient and channel together have none", "notify", { to: "a@b.c", channel: "#x" }, undefined],
    // anything else
    ["no known argument has none", "srv__do_thing", { path: "/x" }, undefined],
    ["null args fields are absent", "post_to_slack", { channel: null, to: null }, undefined],
  ])("%s", (_name, tool, args, want) => {
    expect(extractTarget(tool, args)).toBe(want);
  });

  it("extractUrlHost rejects an empty host", () => {
    expect(extractUrlHost("http://")).toBeUndefined();
    expect(extractUrlHost("https://[::1]:8443/")).toBe("[::1]");
  });
});

describe("extractCallTargets", () => {
  it("lists every distinct recipient of a mail-like call, in argument order", () => {
    expect(extractCallTargets("send_email", { to: ["ops@corp", "b@corp"], cc: "ops@corp", bcc: ["c@x"] })).toEqual({ target: undefined, targets: ["ops@corp", "b@corp", "c@x"] });
    expect(extractCallTargets("send_email", { to: "ops@corp" })).toEqual({ target: "ops@corp", targets: ["ops@corp"] });
  });

  it("one unreadable recipient means no target at all, not the others", () => {
    expect(extractCallTargets("send_email", { to: ["ops@corp"], cc: [7] })).toEqual({ target: undefined, targets: [] });
    expect(extractCallTargets("send_email", { to: ["ops@corp", ""] })).toEqual({ target: undefined, targets: [] });
  });

  const value = (...names: string[]): ToolTargetRule => ({ arguments: names, kind: "value" });
  const host = (...names: string[]): ToolTargetRule => ({ arguments: names, kind: "url_host" });

  it.each<[string, ToolTargetRule, Record<string, unknown>, string[]]>([
    ["a declared argument", value("iban"), { iban: "GB29NWBK60161331926819", amount: 5 }, ["GB29NWBK60161331926819"]],
    ["it replaces the built-in rule", value("iban"), { iban: "GB29", recipient: "evil@x.com" }, ["GB29"]],
    ["a list argument", value("recipients"), { recipients: ["a@corp", "b@corp", "a@corp"] }, ["a@corp", "b@corp"]],
    ["several arguments together", value("recipients", "cc", "bcc"), { recipients: ["a@corp"], cc: ["b@corp"], bcc: null }, ["a@corp", "b@corp"]],
    ["a missing argument has none", value("recipient"), { amount: 5 }, []],
    ["a number is no target at all", value("recipient"), { recipient: 42 }, []],
    ["an object is no target at all", value("recipient"), { recipient: { iban: "GB29" } }, []],
    ["one bad value among good ones is no target at all", value("recipients", "cc"), { recipients: ["a@corp"], cc: [{}] }, []],
    ["an empty string is no target at all", value("channel"), { channel: "" }, []],
    ["an inherited property is not an argument", value("toString"), {}, []],
    ["a URL's host", host("url"), { url: "https://www.Example.com/page?x=1" }, ["www.example.com"]],
    ["a URL without a scheme is read as http", host("url"), { url: "www.informations.com/news" }, ["www.informations.com"]],
    ["userinfo is not the host", host("url"), { url: "good.example.com@evil.example/x" }, ["evil.example"]],
    ["another scheme has none", host("url"), { url: "ftp://files.example.com/x" }, []],
    ["a scheme-like host:port has none", host("url"), { url: "localhost:8080/x" }, []],
    ["hosts of a list of URLs", host("urls"), { urls: ["https://a.example/1", "b.example/2", "https://a.example/3"] }, ["a.example", "b.example"]],
  ])("declared: %s", (_name, rule, args, want) => {
    const got = extractCallTargets("srv__tool", args, rule);
    expect(got.targets).toEqual(want);
    expect(got.target).toBe(want.length === 1 ? want[0] : undefined);
  });

  it("extractUrlHost reads a schemeless value only when asked", () => {
    expect(extractUrlHost("www.example.com")).toBeUndefined();
    expect(extractUrlHost("www.example.com", { schemeless: true })).toBe("www.example.com");
    expect(extractUrlHost("javascript:alert(1)", { schemeless: true })).toBeUndefined();
  });
});
