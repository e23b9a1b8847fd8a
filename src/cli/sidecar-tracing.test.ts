import { describe, expect, it } from "vitest";
import { parseTraceFlags } from "./sidecar-tracing.ts";

// The tracing flags of `leviath sidecar` and `leviath controller`: off without an endpoint, an endpoint checked (an
// http(s) URL without credentials; a bare one gets OTLP's /v1/traces), the content level one of four words.
describe("parseTraceFlags", () => {
  it("is off without an endpoint, and a content level alone is a mistake", () => {
    expect(parseTraceFlags({})).toBeUndefined();
    expect(() => parseTraceFlags({ "trace-content": "private" })).toThrow("--trace-content goes with --otlp-traces-endpoint");
  });

  it("takes an OTLP/HTTP endpoint, public content by default", () => {
    expect(parseTraceFlags({ "otlp-traces-endpoint": "http://collector:4318" })).toEqual({ endpoint: "http://collector:4318/v1/traces", content: "public" });
    expect(parseTraceFlags({ "otlp-traces-endpoint": "https://otel.example/v1/traces", "trace-content": "none" })).toEqual({ endpoint: "https://otel.example/v1/traces", content: "none" });
  });

  it("refuses what is no endpoint or no level", () => {
    expect(() => parseTraceFlags({ "otlp-traces-endpoint": "collector:4318" })).toThrow("is not an http(s) URL");
    expect(() => parseTraceFlags({ "otlp-traces-endpoint": "not a url" })).toThrow("is not a URL");
    expect(() => parseTraceFlags({ "otlp-traces-endpoint": "http://user:pw@collector:4318" })).toThrow("carries credentials");
    expect(() => parseTraceFlags({ "otlp-traces-endpoint": "http://collector:4318", "trace-content": "secret" })).toThrow("is not one of none, public, internal, private");
  });
});
