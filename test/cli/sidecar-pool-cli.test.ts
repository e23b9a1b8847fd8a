import { describe, expect, it } from "vitest";
import { leviath } from "./run-cli.ts";

// `leviath sidecar --pool` checks its flags and environment before it connects anywhere: a pool pod learns its
// run only when it is bound, so a flag naming one is a usage error, and without its pod's name it cannot look.
describe("leviath sidecar --pool flags", () => {
  it.each([["--run-policy", "p.json"], ["--run", "r1"], ["--mcp-secrets-dir", "/x"], ["--blueprint-dir", "/x"]])("refuses %s", (flag, value) => {
    const r = leviath(["sidecar", "--pool", "--workdir", ".", flag, value], { env: { LEVIATH_POD: "p", LEVIATH_NAMESPACE: "n" } });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${flag} cannot be used with --pool (a pool pod learns its run when it is bound)`);
  });

  it("needs its pod's name and namespace", () => {
    const r = leviath(["sidecar", "--pool", "--workdir", "."], { env: { LEVIATH_POD: undefined, LEVIATH_NAMESPACE: undefined } });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--pool needs LEVIATH_POD and LEVIATH_NAMESPACE");
  });

  it("listens on loopback only", () => {
    const r = leviath(["sidecar", "--pool", "--workdir", ".", "--listen", "0.0.0.0:7777"], { env: { LEVIATH_POD: "p", LEVIATH_NAMESPACE: "n" } });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("is not a loopback address");
  });

  it("needs the runtime token file: the runtime beside it asks for its binding with that token", () => {
    const r = leviath(["sidecar", "--pool", "--workdir", "."], { env: { LEVIATH_POD: "p", LEVIATH_NAMESPACE: "n" } });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--pool needs --runtime-token-file");
  });
});
