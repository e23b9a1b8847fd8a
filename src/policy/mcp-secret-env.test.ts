import { describe, expect, it } from "vitest";
import { McpServerSchema, type McpServer } from "../api/leviath-policy.ts";
import { computeSandboxSecretEnvRefusal } from "./mcp-secret-env.ts";

describe("computeSandboxSecretEnvRefusal", () => {
  const stdio: McpServer = { name: "fs", command: "mcp-fs", env: { MODE: "ro", TOKEN: "x-${TOKEN}-${OTHER}" }, secretRef: { name: "fs-mcp" } };

  it("refuses a stdio server whose env names a ${VAR}, naming the first such entry, the Secret and the opt-in", () => {
    expect(computeSandboxSecretEnvRefusal(stdio)).toBe("env 'TOKEN': ${TOKEN} would put a value of Secret 'fs-mcp' into the sandbox pod, where the model's commands can read it; the server is not started (the admin allows it with secretEnvInSandbox: true on the server)");
    expect(computeSandboxSecretEnvRefusal({ name: "fs", command: "mcp-fs", env: { T: "${T}" } })).toContain("env 'T': ${T} would put a value of a Secret into the sandbox pod");
  });

  it("lets through an opted-in server, an env of literals, and an HTTP server's headers (they never reach a pod)", () => {
    expect(computeSandboxSecretEnvRefusal({ ...stdio, secretEnvInSandbox: true })).toBeUndefined();
    expect(computeSandboxSecretEnvRefusal({ ...stdio, env: { MODE: "ro", PRICE: "$5 {x}" } })).toBeUndefined();
    expect(computeSandboxSecretEnvRefusal({ name: "t", url: "https://t.example/mcp", headers: { A: "${T}" }, secretRef: { name: "t" } })).toBeUndefined();
  });
});

describe("McpServerSchema secretEnvInSandbox", () => {
  it("is for a stdio server only", () => {
    expect(McpServerSchema.safeParse({ name: "fs", command: "mcp-fs", secretEnvInSandbox: true }).success).toBe(true);
    const r = McpServerSchema.safeParse({ name: "t", url: "https://t.example/mcp", secretEnvInSandbox: true });
    expect(r.error?.issues).toMatchObject([{ path: ["secretEnvInSandbox"], message: "secretEnvInSandbox is for a stdio server (command)" }]);
  });
});
