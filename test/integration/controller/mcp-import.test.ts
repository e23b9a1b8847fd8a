// Upstream's own config.example.toml through `leviath import`, against the real API server: the LeviathPolicy it
// prints is accepted as written (kubectl apply with strict field validation) and found valid by the controller, and
// the commands its finding prints, run by a shell as an admin would, make the Secret the `remote` server's
// secretRef names, which a Run's sidecar (and nothing else) then mounts.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { findBinary, kubectl, REPO_ROOT, testCluster, waitFor } from "../harness/index.ts";
import { childrenOf, conditionOf, createAgent, createRun, OURS, useOperatorWithoutPolicy, type Custom } from "./operator-harness.ts";

const TOKEN = "imported-token-value";
const files = useOperatorWithoutPolicy("mcp-import");

/** `leviath import` of upstream's example config, as a user runs it. */
function importUpstream(ns: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [join(REPO_ROOT, "bin/leviath"), "import", "test/fixtures/upstream/config.example.toml", "--namespace", ns], { cwd: REPO_ROOT, encoding: "utf8" });
}

describe("upstream's config.example.toml, imported", () => {
  it("is accepted by the API server and the controller, and its finding's commands make the Secret the sidecar mounts", async () => {
    const { namespace } = files;
    const imported = importUpstream(namespace);
    expect(imported.status, imported.stderr).toBe(0);
    const applied = await kubectl(["apply", "--validate=strict", "-f", "-"], { input: imported.stdout, allowFailure: true });
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(applied.stderr).toBe("");
    const policy = await waitFor(async () => {
      const p = (await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as Custom;
      return conditionOf(p, "Valid") !== undefined && p.status?.["observedGeneration"] === p.metadata?.generation ? p : undefined;
    }, { description: "the imported policy's Valid condition" });
    expect(conditionOf(policy, "Valid")).toMatchObject({ status: "True" });
    expect((policy.spec?.["mcpServers"] as { name: string; secretRef?: { name: string } }[]).map((s) => [s.name, s.secretRef?.name])).toEqual([["filesystem", undefined], ["remote", "remote-mcp"]]);

    // The admin runs the finding's commands as printed, in a shell, with the value upstream read from its environment.
    const commands = imported.stderr.split("\n").filter((l) => l.startsWith("  kubectl ")).map((l) => l.trim());
    expect(commands).toEqual([
      `kubectl -n ${namespace} create secret generic remote-mcp --from-literal=MY_MCP_TOKEN="$MY_MCP_TOKEN"`,
      `kubectl -n ${namespace} label secret remote-mcp leviath.dev/mcp-server=remote`,
    ]);
    const cluster = testCluster();
    const bin = findBinary("kubectl", cluster.binDir)!;
    const shell = spawnSync("sh", ["-ec", commands.join("\n")], {
      encoding: "utf8", env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath, MY_MCP_TOKEN: TOKEN, PATH: `${dirname(bin)}:${process.env.PATH ?? ""}` },
    });
    expect(shell.status, shell.stderr).toBe(0);
    const secret = await cluster.core.readNamespacedSecret({ namespace, name: "remote-mcp" });
    expect(Buffer.from(secret.data?.["MY_MCP_TOKEN"] ?? "", "base64").toString("utf8")).toBe(TOKEN);
    expect(secret.metadata?.labels?.["leviath.dev/mcp-server"]).toBe("remote");

    await createAgent(namespace, "reviewer", { stages: [{ name: "main", availableConnectors: ["remote"], sandbox: { kind: "container", image: "debian:bookworm-slim" } }] });
    await createRun(namespace, "imported-1", { agentRef: { name: "reviewer" } });
    const engine = await waitFor(async () => (await childrenOf(namespace, "imported-1")).find((c) => c.ref === "Pod/imported-1-engine")?.obj as V1Pod | undefined, { description: "the engine pod" });
    const volumes = (engine.spec?.volumes ?? []).filter((v) => v.secret?.secretName === "remote-mcp");
    expect(volumes).toHaveLength(1);
    const sidecar = engine.spec!.initContainers!.find((c) => c.name === "sidecar")!;
    expect(sidecar.volumeMounts?.filter((m) => m.name === volumes[0]!.name).map((m) => m.mountPath)).toEqual(["/var/run/leviath/mcp-secrets/remote-mcp"]);
    for (const c of engine.spec!.containers) expect(c.volumeMounts?.map((m) => m.name)).not.toContain(volumes[0]!.name);
    expect(JSON.stringify(engine)).not.toContain(TOKEN);
  });
});
