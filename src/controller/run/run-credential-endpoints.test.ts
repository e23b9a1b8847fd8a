import { describe, expect, it } from "vitest";
import { checkCredentialEndpoints, decideCredentialEndpoints, readCredentialEndpoints } from "./run-credential-endpoints.ts";

const runtime = { providers: { anthropic: { baseUrl: "https://gw.internal/llm/v1" } } };

describe("a Run's credential endpoints", () => {
  it("pin what each Secret ties when every one ties the Run's base URL", () => {
    const read = [{ secretName: "a", found: true, endpoints: ["https://gw.internal/llm"] }, { secretName: "b", found: true, endpoints: ["https://gw.internal"] }];
    expect(decideCredentialEndpoints(runtime, read)).toEqual({ ok: true, ties: [{ secretName: "a", endpoints: ["https://gw.internal/llm"] }, { secretName: "b", endpoints: ["https://gw.internal"] }] });
  });

  it("refuse the Run naming the field and the Secret that does not tie it, and wait for a missing one", () => {
    const untied = decideCredentialEndpoints(runtime, [{ secretName: "a", found: true, endpoints: ["https://gw.internal/llm"] }, { secretName: "team-key", found: true, endpoints: [] }]);
    expect(untied).toMatchObject({ ok: false, reason: "RefusedByPolicy", message: expect.stringMatching(/^spec\.runtime\.providers\.anthropic\.baseUrl 'https:\/\/gw\.internal\/llm\/v1' is not an endpoint credential Secret 'team-key' ties/) });
    expect(decideCredentialEndpoints(runtime, [{ secretName: "gone", found: false, endpoints: [] }])).toMatchObject({ ok: false, reason: "SecretNotFound", message: expect.stringContaining("Secret 'gone' is not found") });
  });

  it("read no Secret when the Run picks no base URL or names no credential", async () => {
    const writer = { readMetadata: async () => { throw new Error("no read expected"); } };
    expect(await readCredentialEndpoints(writer, "team", { runtime: { model: "x" }, credentials: [{ secretName: "a", as: "env" }] })).toBeUndefined();
    expect(await readCredentialEndpoints(writer, "team", { runtime, credentials: [] })).toBeUndefined();
    // Nothing read: nothing to tie, and nothing pinned.
    expect(checkCredentialEndpoints(runtime, undefined)).toEqual({ ties: undefined });
    expect(checkCredentialEndpoints(runtime, [{ secretName: "gone", found: false, endpoints: [] }])).toMatchObject({ blocked: true, phase: "Pending", reason: "SecretNotFound", recheckMs: 5000 });
  });
});
