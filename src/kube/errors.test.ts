import { describe, expect, it } from "vitest";
import { classifyError, KubeApiError, parseApiError } from "./errors.ts";

describe("classifyError", () => {
  it.each([
    [new KubeApiError(409, "Conflict", "x"), "transient"],
    [new KubeApiError(429, "TooManyRequests", "x"), "transient"],
    [new KubeApiError(503, "ServiceUnavailable", "x"), "transient"],
    [new KubeApiError(422, "Invalid", "x"), "invalid"],
    [new KubeApiError(400, "BadRequest", "x"), "invalid"],
    [new KubeApiError(403, "Forbidden", "x"), "forbidden"],
    [new KubeApiError(401, "Unauthorized", "x"), "forbidden"],
    [Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } }), "transient"],
    [new DOMException("timed out", "TimeoutError"), "transient"],
    [new Error("a bug"), "internal"],
  ])("%s is %s", (err, kind) => {
    expect(classifyError(err)).toBe(kind);
  });

  it("reads the Status the API server sends", () => {
    const err = parseApiError(422, JSON.stringify({ kind: "Status", reason: "Invalid", message: "Pod \"x\" is invalid" }), "PATCH /api/v1/pods/x");
    expect([err.code, err.reason, err.message]).toEqual([422, "Invalid", 'PATCH /api/v1/pods/x: Pod "x" is invalid']);
    expect(parseApiError(502, "<html>", "GET /x").message).toBe("GET /x: HTTP 502 <html>");
  });
});
