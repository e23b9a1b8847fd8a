// The Secrets behind the admin's MCP servers' `${VAR}` headers (`secretRef`), checked once when a Run is pinned.
// A Secret reaches the sidecar container only (never the agent container or a sandbox pod), and only when it lives
// in the Run's namespace and its owner opted it in for exactly that server with the label
// `leviath.dev/mcp-server: <server>`; one also opted in as a credential (`leviath.dev/credential`) is refused,
// since a Run could then hand it to its own runtime image. Nor is the Secret of a stdio server whose env names a
// `${VAR}` without the admin's `secretEnvInSandbox` (the server runs in the sandbox pod). Only metadata is read:
// the controller never holds a value, and the keys are checked by the sidecar, which reports them
// (status.mcpServers). A server whose Secret is refused is still declared (its names stay `[unavailable]`) but
// has nothing mounted, so it is never offered.
import type { McpServer } from "../../api/leviath-policy.ts";
import { LABEL } from "../../api/constants.ts";
import { CONDITION, REASON, type RunStatus } from "../../api/status.ts";
import { computeSandboxSecretEnvRefusal } from "../../policy/mcp-secret-env.ts";
import type { McpSecretCheck } from "../../sandbox/run-snapshot.ts";
import type { KubeObject } from "../../kube/objects.ts";
import type { ClusterWriter } from "../cluster-port.ts";
import type { ConditionDecision } from "../conditions.ts";
import { CREDENTIAL_OPT_IN } from "./run-credentials.ts";

/** Each MCP Secret's metadata by name, as read (undefined: not found). */
export type McpSecretReadings = ReadonlyMap<string, KubeObject | undefined>;

/** Reads the metadata of the Secrets the servers name (not those a server's sandbox env refuses outright). */
export async function readMcpSecrets(writer: Pick<ClusterWriter, "readMetadata">, namespace: string, servers: readonly McpServer[]): Promise<McpSecretReadings> {
  const names = [...new Set(servers.filter((s) => s.secretRef !== undefined && computeSandboxSecretEnvRefusal(s) === undefined).map((s) => s.secretRef!.name))];
  const found = await Promise.all(names.map((n) => writer.readMetadata("secret", namespace, n)));
  return new Map(names.map((n, i) => [n, found[i]]));
}

/** Checks each server's Secret in the Run's namespace (servers without `secretRef` need none), from what was read; pure. */
export function checkMcpSecrets(read: McpSecretReadings, namespace: string, servers: readonly McpServer[]): McpSecretCheck[] {
  return servers.filter((s) => s.secretRef !== undefined).map((s): McpSecretCheck => {
    const secretName = s.secretRef!.name;
    const inSandbox = computeSandboxSecretEnvRefusal(s);
    if (inSandbox !== undefined) return { server: s.name, secretName, mounted: false, reason: REASON.secretInSandboxRefused, message: inSandbox };
    const found = read.get(secretName);
    const labels = found?.metadata.labels ?? {};
    if (found === undefined) return { server: s.name, secretName, mounted: false, reason: REASON.secretNotFound, message: `Secret '${secretName}' not found in namespace '${namespace}'` };
    if (labels[LABEL.mcpServer] !== s.name) {
      return { server: s.name, secretName, mounted: false, reason: REASON.secretNotOptedIn, message: `Secret '${secretName}' lacks the label ${LABEL.mcpServer}: "${s.name}" (only a Secret its owner opted in for this server is sent to it)` };
    }
    if (labels[LABEL.credential] === CREDENTIAL_OPT_IN) {
      return { server: s.name, secretName, mounted: false, reason: REASON.secretNotOptedIn, message: `Secret '${secretName}' is also a credential (${LABEL.credential}: "${CREDENTIAL_OPT_IN}"), which any Run could hand to its runtime: an MCP server's Secret must be its alone` };
    }
    return { server: s.name, secretName, mounted: true };
  });
}

/**
 * McpServersReady: False naming the server and the Secret (pinned at start) or the key (the sidecar's report);
 * Unknown until the sidecar has reported; True once every server is offered. Absent when the run has no server.
 */
export function decideMcpCondition(servers: readonly McpServer[], checks: readonly McpSecretCheck[], reported: RunStatus["mcpServers"]): ConditionDecision | undefined {
  if (servers.length === 0) return undefined;
  const type = CONDITION.mcpServersReady;
  const refused = checks.filter((c) => !c.mounted);
  const unmounted = new Set(refused.map((c) => c.server));
  // What the sidecar says, for the servers whose Secret (if any) reached it; it names the server already.
  const down = (reported ?? []).filter((r) => !r.offered && !unmounted.has(r.name));
  const problems = [
    ...refused.map((c) => ({ reason: c.reason ?? REASON.secretNotFound, text: `MCP server '${c.server}': ${c.message ?? "its Secret is not mounted"}` })),
    ...down.map((r) => ({ reason: REASON.mcpServerUnavailable, text: r.message?.startsWith(`mcp server '${r.name}'`) === true ? r.message : `MCP server '${r.name}': ${r.message ?? "not offered"}` })),
  ];
  if (problems.length > 0) return { type, status: "False", reason: problems[0]!.reason, message: `${problems.map((p) => p.text).join("; ")}; the tools of ${problems.length === 1 ? "that server are" : "those servers are"} not offered` };
  const offered = new Set((reported ?? []).filter((r) => r.offered).map((r) => r.name));
  if (servers.every((s) => offered.has(s.name))) return { type, status: "True", reason: REASON.mcpServersOffered, message: `${servers.length} MCP server(s) offered: ${servers.map((s) => `'${s.name}'`).join(", ")}` };
  return { type, status: "Unknown", reason: REASON.mcpServersConnecting, message: "the sidecar has not yet reported on every MCP server" };
}
