import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunPolicySchema } from "../../src/api/run-policy.ts";
import type { McpServer } from "../../src/api/leviath-policy.ts";
import { callTool, get, makeTempDir, runtimeAuth, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// A stdio MCP server whose env names its Secret, in the cluster's shape (--run-policy, --mcp-secrets-dir laid out
// as the kubelet mounts the Secrets): such a server runs where the model's commands run, so without the admin's
// `secretEnvInSandbox` the real sidecar refuses to start it and says which server and entry; no process gets the
// value. With it, the server starts and has the value. The same path into a sandbox pod: pod-exec-stdio-server.test.ts.
const EVERYTHING = join(import.meta.dirname, "../../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const SECRET = `s3cret-${process.pid}-${Date.now()}`;
let sc: SidecarProcess;

const server = (name: string, optIn: boolean): McpServer => ({
  name, command: process.execPath, args: [EVERYTHING, "stdio"], env: { TOKEN: "${TOKEN}" }, secretRef: { name: "everything-mcp" }, ...(optIn ? { secretEnvInSandbox: true } : {}),
});

type ServerState = { name: string; offered: boolean; tools: number; message?: string };
const status = async () => (await get<{ mcpServers?: ServerState[] }>(`${sc.url}/v1/status`, runtimeAuth(sc.url))).body;

/** Live processes whose environment holds the Secret's value. */
function holdingSecret(): number[] {
  return readdirSync("/proc").filter((p) => /^\d+$/.test(p)).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/environ`, "utf8").includes(SECRET);
    } catch {
      return false;
    }
  }).map(Number);
}

beforeAll(async () => {
  const root = makeTempDir("leviath-sidecar-gw-secret-env-");
  mkdirSync(join(root, "work"));
  mkdirSync(join(root, "mcp-secrets", "everything-mcp"), { recursive: true });
  writeFileSync(join(root, "mcp-secrets", "everything-mcp", "TOKEN"), SECRET);
  const stage = { name: "main", availableConnectors: ["refused", "allowed"], sandbox: { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" } };
  writeFileSync(join(root, "run-policy.json"), JSON.stringify(RunPolicySchema.parse({
    agent: { key: "default/gw-secret-env", name: "gw-secret-env" }, stages: [stage], entryStage: "main", launch: { mode: "interactive", allow: [] },
    toolPermissions: { blueprint: {}, ceiling: { "refused__get-env": "allow", "allowed__get-env": "allow" }, allowBlueprintPermissions: false },
    readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false }, taint: { tracking: false, allowlist: [], rules: [], toolOverrides: {} },
    mcpServers: [server("refused", false), server("allowed", true)], limits: { interactionTimeoutSeconds: 3600, shellTimeoutSeconds: 60 },
  })));
  sc = await startSidecar([
    "--run-policy", join(root, "run-policy.json"), "--run", "gw-secret-env", "--workdir", join(root, "work"), "--audit-dir", join(root, "audit"),
    "--mcp-secrets-dir", join(root, "mcp-secrets"),
  ]);
  for (const end = Date.now() + 60_000; Date.now() < end && (await status()).mcpServers?.some((m) => m.message === "connecting") !== false;) await new Promise((r) => setTimeout(r, 100));
}, 120_000);

afterAll(async () => {
  if (sc) expect(await sc.stop()).toBe(0);
});

describe("a stdio MCP server's env from its Secret", { timeout: 60_000 }, () => {
  it("without secretEnvInSandbox: not started, the server and the entry named, its tools unavailable", async () => {
    expect((await status()).mcpServers?.find((m) => m.name === "refused")).toEqual({
      name: "refused", offered: false, tools: 0,
      message: "mcp server 'refused' env 'TOKEN': ${TOKEN} would put a value of Secret 'everything-mcp' into the sandbox pod, where the model's commands can read it; the server is not started (the admin allows it with secretEnvInSandbox: true on the server)",
    });
    expect((await callTool(sc, "refused__get-env", {}, "r1")).body).toMatchObject({ decision: "deny", code: "tool-unavailable" });
  });

  it("with secretEnvInSandbox: started with the value, and it is the only process holding it", async () => {
    expect((await status()).mcpServers?.find((m) => m.name === "allowed")).toMatchObject({ offered: true });
    const r = await callTool(sc, "allowed__get-env", {}, "a1");
    expect(r.body).toMatchObject({ decision: "allow", isError: false });
    expect(JSON.parse(String(r.body.result))).toMatchObject({ TOKEN: SECRET });
    // Only the confined server (its unshare(1) parent and itself) holds it, never the sidecar.
    const holding = holdingSecret();
    expect(holding.length).toBeGreaterThan(0);
    for (const pid of holding) expect(readFileSync(`/proc/${pid}/cmdline`, "utf8")).toContain(EVERYTHING);
  });
});
