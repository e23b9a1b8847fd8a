import { describe, expect, it } from "vitest";
import type { McpServer } from "../../api/leviath-policy.ts";
import { checkMcpSecrets as checkRead, decideMcpCondition, readMcpSecrets } from "./mcp-secrets.ts";

/** Reads the Secrets as the gatherer does, then checks them. */
const checkMcpSecrets = async (writer: Parameters<typeof readMcpSecrets>[0], ns: string, list: readonly McpServer[]) => checkRead(await readMcpSecrets(writer, ns, list), ns, list);

const servers: McpServer[] = [
  { name: "tickets", url: "https://t.example/mcp", headers: { Authorization: "Bearer ${T}" }, secretRef: { name: "tickets-mcp" } },
  { name: "open", url: "https://o.example/mcp" },
];

describe("decideMcpCondition", () => {
  it("is absent without servers, Unknown until the sidecar reports, True when every server is offered", () => {
    expect(decideMcpCondition([], [], undefined)).toBeUndefined();
    const mounted = [{ server: "tickets", secretName: "tickets-mcp", mounted: true }];
    expect(decideMcpCondition(servers, mounted, undefined)).toMatchObject({ status: "Unknown", reason: "McpServersConnecting" });
    expect(decideMcpCondition(servers, mounted, [{ name: "tickets", offered: true, tools: 1 }, { name: "open", offered: true, tools: 2 }]))
      .toMatchObject({ status: "True", reason: "McpServersOffered", message: "2 MCP server(s) offered: 'tickets', 'open'" });
  });

  it("names every server that is not offered, with the Secret or the key", () => {
    const refused = [{ server: "tickets", secretName: "tickets-mcp", mounted: false, reason: "SecretNotFound", message: "Secret 'tickets-mcp' not found in namespace 'a'" }];
    const c = decideMcpCondition(servers, refused, [{ name: "tickets", offered: false, tools: 0, message: "mcp server 'tickets' header 'Authorization': key 'T' is not in Secret 'tickets-mcp'" }, { name: "open", offered: false, tools: 0, message: "fetch failed" }]);
    // The pinned refusal explains 'tickets' (the sidecar's view of an unmounted Secret adds nothing); 'open' is the sidecar's.
    expect(c).toEqual({ type: "McpServersReady", status: "False", reason: "SecretNotFound", message: "MCP server 'tickets': Secret 'tickets-mcp' not found in namespace 'a'; MCP server 'open': fetch failed; the tools of those servers are not offered" });
  });
});

describe("checkMcpSecrets", () => {
  const meta = (labels: Record<string, string> | undefined) => ({ readMetadata: async () => (labels === undefined ? undefined : { apiVersion: "v1", kind: "Secret", metadata: { name: "tickets-mcp", labels } }) });
  it("mounts only a Secret opted in for that server and not also a credential; reads metadata only", async () => {
    expect(await checkMcpSecrets(meta({ "leviath.dev/mcp-server": "tickets" }), "a", servers)).toEqual([{ server: "tickets", secretName: "tickets-mcp", mounted: true }]);
    expect((await checkMcpSecrets(meta({ "leviath.dev/mcp-server": "other" }), "a", servers))[0]).toMatchObject({ mounted: false, reason: "SecretNotOptedIn" });
    expect((await checkMcpSecrets(meta({ "leviath.dev/mcp-server": "tickets", "leviath.dev/credential": "true" }), "a", servers))[0]).toMatchObject({ mounted: false, reason: "SecretNotOptedIn" });
    expect((await checkMcpSecrets(meta(undefined), "a", servers))[0]).toMatchObject({ mounted: false, reason: "SecretNotFound" });
  });

  it("mounts no Secret for a stdio server whose env names it, unless the admin let it into the sandbox", async () => {
    const stdio: McpServer = { name: "tickets", command: "mcp-tickets", env: { TOKEN: "Bearer ${T}", MODE: "ro" }, secretRef: { name: "tickets-mcp" } };
    const opted = meta({ "leviath.dev/mcp-server": "tickets" });
    expect(await checkMcpSecrets(opted, "a", [stdio])).toEqual([{
      server: "tickets", secretName: "tickets-mcp", mounted: false, reason: "SecretInSandboxRefused",
      message: "env 'TOKEN': ${T} would put a value of Secret 'tickets-mcp' into the sandbox pod, where the model's commands can read it; the server is not started (the admin allows it with secretEnvInSandbox: true on the server)",
    }]);
    expect(await checkMcpSecrets(opted, "a", [{ ...stdio, secretEnvInSandbox: true }])).toEqual([{ server: "tickets", secretName: "tickets-mcp", mounted: true }]);
    // An env of literals only takes nothing from the Secret.
    expect(await checkMcpSecrets(opted, "a", [{ ...stdio, env: { MODE: "ro" } }])).toEqual([{ server: "tickets", secretName: "tickets-mcp", mounted: true }]);
  });
});
