import { describe, expect, it } from "vitest";
import { buildMcpSecretName, computeMcpSecretRefs } from "./import-mcp-secrets.ts";

describe("buildMcpSecretName", () => {
  it("makes a Kubernetes name of any server name, and never one already taken", () => {
    expect(buildMcpSecretName("remote", new Set())).toBe("remote-mcp");
    expect(buildMcpSecretName("My_Server", new Set())).toBe("my-server-mcp");
    expect(buildMcpSecretName("__", new Set())).toBe("server-mcp");
    expect(buildMcpSecretName("Docs", new Set(["docs-mcp", "docs-mcp-2"]))).toBe("docs-mcp-3");
  });
});

describe("computeMcpSecretRefs", () => {
  const at = { file: "config.toml", namespace: "team-a" };

  it("gives two servers whose names fold together two Secrets, keeps a secretRef already named, and leaves a server without ${VAR} alone", () => {
    const { servers, warnings } = computeMcpSecretRefs([
      { name: "Docs", url: "https://a.example/mcp", headers: { "X-Key": "${A}" } },
      { name: "docs", url: "https://b.example/mcp", headers: { "X-Key": "${B}" } },
      { name: "named", url: "https://c.example/mcp", headers: { "X-Key": "${C}" }, secretRef: { name: "docs-mcp-9" } },
      { name: "open", url: "https://d.example/mcp" },
    ], at);
    expect(servers.map((s) => s.secretRef?.name)).toEqual(["docs-mcp", "docs-mcp-2", "docs-mcp-9", undefined]);
    expect(warnings.map((w) => w.where)).toEqual(["mcp_servers[0]", "mcp_servers[1]", "mcp_servers[2]"]);
    expect(warnings[1]!.message).toContain("kubectl -n team-a create secret generic docs-mcp-2 --from-literal=B=\"$B\"");
  });

  it("names every key once however often it is used, and says the sandbox trade only for a stdio server's env", () => {
    const { warnings } = computeMcpSecretRefs([
      { name: "x", url: "https://x.example/mcp", headers: { Authorization: "Bearer ${T}", "X-Also": "${T}-${U}" } },
      { name: "y", command: "y", headers: { "X-H": "${H}" } },
    ], at);
    expect(warnings[0]!.message).toContain("takes ${T} in headers.Authorization, ${T} in headers.X-Also, ${U} in headers.X-Also from Secret 'x-mcp' (its secretRef), keys T, U:");
    expect(warnings[0]!.message).toContain("--from-literal=T=\"$T\" --from-literal=U=\"$U\"");
    expect(warnings.map((w) => w.message.includes("secretEnvInSandbox"))).toEqual([false, false]);
    expect(warnings.some((w) => w.message.includes("label value"))).toBe(false);
  });

  it("says when a server's name cannot be the opt-in label's value, so no Secret could ever be opted in for it", () => {
    const { warnings } = computeMcpSecretRefs([{ name: "_tickets", url: "https://t.example/mcp", headers: { Authorization: "${T}" } }], at);
    expect(warnings[0]!.message).toContain("\nThe server's name is not a label value (it must begin and end with a letter or digit), so no Secret can be opted in for it: rename the server.");
  });
});
