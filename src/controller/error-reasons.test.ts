import { describe, expect, it } from "vitest";
import { KubeApiError } from "../kube/errors.ts";
import { decideErrorReason } from "./error-reasons.ts";

const api = (code: number) => new KubeApiError(code, "x", `pods "p": HTTP ${code}`);
const withCode = (name: string, code: string) => Object.assign(new Error("failed"), { name, code });

describe("decideErrorReason", () => {
  it("names the API server's refusals by their status", () => {
    expect([403, 401, 404, 409, 422, 400, 429, 504].map((c) => decideErrorReason(api(c)))).toEqual([
      "Forbidden", "Forbidden", "NotFound", "Conflict", "Invalid", "Invalid", "TooManyRequests", "Timeout",
    ]);
    expect(decideErrorReason(api(503))).toBe("ServerError");
    expect(decideErrorReason(api(418))).toBe("InternalError");
  });

  it("tells a timeout from a connection that failed, and both from a bug", () => {
    expect(decideErrorReason(Object.assign(new Error("aborted"), { name: "TimeoutError" }))).toBe("Timeout");
    expect(decideErrorReason(withCode("Error", "ETIMEDOUT"))).toBe("Timeout");
    expect(decideErrorReason(withCode("Error", "ECONNREFUSED"))).toBe("Unreachable");
    expect(decideErrorReason(new TypeError("x is undefined"))).toBe("InternalError");
  });
});
