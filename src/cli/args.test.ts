import { describe, expect, it } from "vitest";
import { parseListenAddress, parseLogLevel } from "./args.ts";

describe("parseListenAddress", () => {
  it("reads host:port and [v6]:port, port 0 included", () => {
    expect(parseListenAddress("--listen", "127.0.0.1:8181")).toEqual({ host: "127.0.0.1", port: 8181 });
    expect(parseListenAddress("--listen", "[::1]:0")).toEqual({ host: "::1", port: 0 });
    expect(parseListenAddress("--listen", "localhost:65535")).toEqual({ host: "localhost", port: 65535 });
  });

  it("gives an empty host the caller's any-host, and refuses it when there is none", () => {
    expect(parseListenAddress("--metrics-bind-address", ":8080", "0.0.0.0")).toEqual({ host: "0.0.0.0", port: 8080 });
    expect(() => parseListenAddress("--listen", ":8080")).toThrow("--listen ':8080' is not host:port");
  });

  it("refuses what is not host:port, naming the flag", () => {
    for (const bad of ["8080", "host:", "host:99999", "host:80:80", "[::1]", "a b:x", ""]) {
      expect(() => parseListenAddress("--health-probe-bind-address", bad, "0.0.0.0"), bad).toThrow(`--health-probe-bind-address '${bad}' is not host:port`);
    }
  });
});

describe("parseLogLevel", () => {
  it("defaults to info and refuses an unknown level by name", () => {
    expect(parseLogLevel(undefined)).toBe("info");
    expect(parseLogLevel("debug")).toBe("debug");
    expect(() => parseLogLevel("loud")).toThrow("--log-level 'loud' is not one of");
  });
});
