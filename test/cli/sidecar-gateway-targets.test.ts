import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, makeTempDir, parseJsonLines, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";
import { repo } from "./run-cli.ts";

// A real MCP server (server-everything, over stdio, started confined by the sidecar) behind the gateway, headless:
// its `echo` is declared to act on its `message` argument (the target), and `get-sum` is allowed by a CEL rule that
// reads the call's arguments. Once a granted read made the context private, the allowlist lets `echo` through to
// the allowlisted target only, and the rule lets `get-sum` through under its bound only; every refusal is audited.
const EVERYTHING = repo("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
let root: string;
let sc: SidecarProcess;
const run = "gwt";

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-gwt-");
  mkdirSync(join(root, "home", "vault"), { recursive: true });
  mkdirSync(join(root, "work"), { recursive: true });
  mkdirSync(join(root, "rules"));
  writeFileSync(join(root, "home", "vault", "secret.txt"), "vault secret\n");
  writeFileSync(join(root, "agent.leviath"), `[agent]\nname = '${run}'\n[read_paths]\nallow = ['~/vault']\n`);
  writeFileSync(join(root, "config.toml"), [
    "[security]", "taint_tracking = true",
    "[tool_permissions]", "everything__echo = 'allow'", "everything__get-sum = 'allow'",
    `[agent_read_paths.${run}]`, "allow = ['~/vault']",
    "[[mcp_servers]]", "name = 'everything'", `command = '${process.execPath}'`, `args = ['${EVERYTHING}', 'stdio']`, "",
  ].join("\n"));
  writeFileSync(join(root, "policy.toml"), [
    "[[allowlist]]", "tool = 'everything__echo'", "to = ['ops@corp.example']", "max_sensitivity = 'private'",
    "[mcp_overrides.everything.tools.echo]", "target = 'message'", "",
  ].join("\n"));
  writeFileSync(join(root, "rules", "small-sums.cel"), 'tool == "everything__get-sum" && args.a + args.b <= 100.0');
  sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--policy", join(root, "policy.toml"), "--rules", join(root, "rules"),
    "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"), "--mode", "headless"], { env: { LEVIATH_HOME: join(root, "home") } });
}, 120_000);

afterAll(async () => {
  expect(await sc.stop()).toBe(0);
});

function auditRecords(file: string): Record<string, unknown>[] {
  const runDir = join(root, "audit", run, "stages");
  return readdirSync(runDir).flatMap((stage) => parseJsonLines(readFileSync(join(runDir, stage, file), "utf8")));
}

describe("a gateway tool's declared target and arguments, under a private context", () => {
  it("taints the context private with a granted read", async () => {
    expect((await callTool(sc, "read_file", { path: "~/vault/secret.txt" }, "r1")).body).toMatchObject({ decision: "allow", taint: "private" });
  });

  it("the allowlist lets the call to the allowlisted target through, and refuses another target", async () => {
    expect((await callTool(sc, "everything__echo", { message: "ops@corp.example" }, "t-ok")).body).toMatchObject({ decision: "allow", result: "Echo: ops@corp.example", isError: false });
    const refused = await callTool(sc, "everything__echo", { message: "mark@evil.example" }, "t-no");
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ decision: "deny", code: "gate-blocked" });
    expect(refused.body.result).toBeUndefined();
  });

  it("a CEL rule reading the arguments allows under its bound only", async () => {
    expect((await callTool(sc, "everything__get-sum", { a: 40, b: 2 }, "s-ok")).body).toMatchObject({ decision: "allow", isError: false });
    expect((await callTool(sc, "everything__get-sum", { a: 400, b: 2 }, "s-no")).body).toMatchObject({ decision: "deny", code: "gate-blocked" });
  });

  it("audits each gate decision by its source: the allowlist rule, the scripted rule, and the blocks", () => {
    const gate = auditRecords("taint_audit.jsonl").filter((r) => String(r["tool_name"]).startsWith("everything__"));
    expect(gate.map((r) => [r["tool_name"], r["decision_source"], r["allowed"]])).toEqual([
      ["everything__echo", "AutoBlock", false], ["everything__echo", { AllowlistRule: { rule_index: 0 } }, true],
      ["everything__echo", "AutoBlock", false],
      ["everything__get-sum", "AutoBlock", false], ["everything__get-sum", { ScriptedRule: { script_name: "small-sums" } }, true],
      ["everything__get-sum", "AutoBlock", false],
    ]);
    const decisions = auditRecords("decisions.jsonl").filter((r) => ["t-ok", "t-no", "s-ok", "s-no"].includes(String(r["call_id"])));
    expect(decisions.map((r) => [r["call_id"], r["decision"]])).toEqual([["t-ok", "allow"], ["t-no", "deny"], ["s-ok", "allow"], ["s-no", "deny"]]);
  });
});
