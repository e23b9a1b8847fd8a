import { describe, expect, it } from "vitest";
import { leviath } from "./run-cli.ts";

// `leviath controller` checks its flags before it reads a kubeconfig: a bad one is a usage error naming the flag.
describe("leviath controller flags", () => {
  it.each([
    [["--metrics-bind-address", "8080"], "--metrics-bind-address '8080' is not host:port"],
    [["--health-probe-bind-address", "0.0.0.0:70000"], "--health-probe-bind-address '0.0.0.0:70000' is not host:port"],
    [["--log-level", "loud"], "--log-level 'loud' is not one of"],
    [["--workers", "0"], "--workers: '0' is not an integer from 1 to 64"],
  ])("refuses %j", (args, message) => {
    const r = leviath(["controller", "--kubeconfig", "/nonexistent/kubeconfig", ...args]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(message);
  });
});
