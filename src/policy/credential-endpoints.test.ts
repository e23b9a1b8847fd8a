import { describe, expect, it } from "vitest";
import { decideKeyDestination, isEndpointTied, listRunBaseUrls, parseEndpointList } from "./credential-endpoints.ts";

describe("credential endpoints", () => {
  it("parse the annotation's http(s) URLs, space- or comma-separated, and ignore the rest", () => {
    expect(parseEndpointList(" https://api.anthropic.com, https://gw.internal:8443/llm\nftp://x  not-a-url ")).toEqual(["https://api.anthropic.com", "https://gw.internal:8443/llm"]);
    expect(parseEndpointList(undefined)).toEqual([]);
  });

  it("tie a base URL only on the same scheme, host and port, at or under the endpoint's path", () => {
    const tied = ["https://api.anthropic.com", "https://gw.internal:8443/llm/"];
    for (const ok of ["https://api.anthropic.com", "https://API.anthropic.com:443/v1", "https://gw.internal:8443/llm", "https://gw.internal:8443/llm/v1"]) expect(isEndpointTied(ok, tied), ok).toBe(true);
    for (const no of [
      "http://api.anthropic.com", "https://api.anthropic.com.evil.example", "https://evil.example/https://api.anthropic.com", "https://gw.internal/llm",
      "https://gw.internal:8443/llmx", "https://gw.internal:8443/", "https://user:pw@api.anthropic.com", "https://attacker@api.anthropic.com", "not a url",
    ]) expect(isEndpointTied(no, tied), no).toBe(false);
  });

  it("list the base URLs a Run's runtime picks, with their fields", () => {
    expect(listRunBaseUrls({ model: "m", providers: { anthropic: { baseUrl: "https://x.example" }, openai: { stream: true }, bad: null } })).toEqual([
      { provider: "anthropic", baseUrl: "https://x.example", field: "spec.runtime.providers.anthropic.baseUrl" },
    ]);
    expect(listRunBaseUrls(undefined)).toEqual([]);
    expect(listRunBaseUrls({ providers: "x" })).toEqual([]);
  });

  it("let a key go to a base URL the Run picked only where every credential Secret ties it, failing closed without ties", () => {
    const target = { provider: "anthropic", baseUrl: "https://evil.example", field: "spec.runtime.providers.anthropic.baseUrl" };
    expect(decideKeyDestination(target, undefined)).toMatch(/no credential Secret ties one for this Run$/);
    expect(decideKeyDestination(target, [])).toMatch(/no credential Secret ties one for this Run$/);
    expect(decideKeyDestination(target, [{ secretName: "team-key", endpoints: [] }])).toBe(
      "spec.runtime.providers.anthropic.baseUrl 'https://evil.example' is not an endpoint credential Secret 'team-key' ties (its annotation leviath.dev/credential-endpoints: none); its keys are never sent where a Run points them");
    expect(decideKeyDestination(target, [{ secretName: "a", endpoints: ["https://evil.example"] }, { secretName: "b", endpoints: ["https://api.anthropic.com"] }])).toContain("credential Secret 'b'");
    expect(decideKeyDestination(target, [{ secretName: "a", endpoints: ["https://evil.example"] }])).toBeUndefined();
  });
});
