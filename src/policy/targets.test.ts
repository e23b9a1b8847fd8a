import { describe, expect, it } from "vitest";
import { extractTarget, extractUrlHost } from "./targets.ts";

describe("extractTarget", () => {
  it.each<[string, string, Record<string, unknown>, string | undefined]>([
    // HTTP-like tools: the URL's host
    ["web_fetch host", "web_fetch", { url: "https://api.example.com/v1?q=1" }, "api.example.com"],
    ["http_get drops the port", "http_get", { url: "http://hooks.internal:8080/x" }, "hooks.internal"],
    ["http_post lower-cases", "http_post", { url: "HTTPS://API.Example.COM/" }, "api.example.com"],
    ["fetch takes the real host, not the userinfo", "fetch", { url: "https://evil.com@good.example.com/" }, "good.example.com"],
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
    ["two recipients have none", "send_email", { to: ["ops@corp", "evil@x.com"] }, undefined],
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
