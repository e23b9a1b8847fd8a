// The generated CRDs, as the real API server serves them: strict unknown-field rejection that names the field,
// admission rules the schema carries, list-maps, the status subresource and printer columns.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRestrictedNamespace, deleteNamespace, expectApiError, installCrds, kubectl, testCluster } from "../harness/index.ts";
import { OURS } from "./operator-harness.ts";

let namespace = "";

beforeAll(async () => {
  const applied = await installCrds("crds/");
  expect(applied.map((o) => o.metadata?.name).sort()).toEqual([
    "agents.leviath.dev", "approvals.leviath.dev", "leviathpolicies.leviath.dev", "runs.leviath.dev",
  ]);
  namespace = await createRestrictedNamespace("crds");
});

afterAll(async () => {
  if (namespace) await deleteNamespace(namespace);
});

const agent = (name: string, spec: Record<string, unknown>) => ({ apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name, namespace }, spec });

describe("the CRDs", () => {
  it("keep an unknown sandbox key as written, whatever field validation asks for, so it is refused rather than pruned", async () => {
    // Pruning would drop `netwrok` before admission could see it, and the sandbox would read looser than the file:
    // the CRDs keep it, and the strict-keys admission policy (test/integration/admission/strict-keys.test.ts) or,
    // without it, the controller refuses it naming the key.
    const { custom } = testCluster();
    for (const fieldValidation of ["Strict", "Warn", "Ignore"] as const) {
      const created = (await custom.createNamespacedCustomObject({
        ...OURS.agents, namespace, body: agent(`kept-${fieldValidation.toLowerCase()}`, { sandbox: { kind: "container", image: "alpine:3", netwrok: false } }), fieldValidation,
      })) as { spec: { sandbox: Record<string, unknown> } };
      expect(created.spec.sandbox, fieldValidation).toEqual({ kind: "container", image: "alpine:3", netwrok: false });
    }
  });

  it("keep the runtime's verbatim tables as written", async () => {
    const { custom } = testCluster();
    const created = (await custom.createNamespacedCustomObject({
      ...OURS.agents, namespace, fieldValidation: "Strict",
      body: agent("verbatim", { blueprint: { context: { regions: [{ name: "notes", max_tokens: 4000 }] } }, stages: [{ name: "a", runtime: { mode: "autonomous", max_iterations: 5 } }] }),
    })) as { spec: { blueprint: unknown; stages: { runtime: unknown }[] } };
    expect(created.spec.blueprint).toEqual({ context: { regions: [{ name: "notes", max_tokens: 4000 }] } });
    expect(created.spec.stages[0]!.runtime).toEqual({ mode: "autonomous", max_iterations: 5 });
  });

  it("reject what the schema types forbid, naming the field", async () => {
    const { custom } = testCluster();
    const err = await expectApiError(custom.createNamespacedCustomObject({ ...OURS.agents, namespace, body: agent("bad-kind", { sandbox: { kind: "docker" } }) }));
    expect(err.code).toBe(422);
    expect(err.message).toContain("spec.sandbox.kind");
    expect(err.message).toContain('"docker"');
  });

  it("serve stages as a list-map: a duplicate stage name is refused", async () => {
    const { custom } = testCluster();
    const err = await expectApiError(custom.createNamespacedCustomObject({ ...OURS.agents, namespace, body: agent("dup", { stages: [{ name: "a" }, { name: "a" }] }) }));
    expect(err.code).toBe(422);
    expect(err.message).toMatch(/spec\.stages\[1\]: Duplicate value/);
  });

  it("refuse an Agent whose self-declared name differs from its object name", async () => {
    const { custom } = testCluster();
    const err = await expectApiError(custom.createNamespacedCustomObject({ ...OURS.agents, namespace, body: agent("cto", { agent: { name: "trusted-agent" } }) }));
    expect(err.code).toBe(422);
    expect(err.message).toContain("spec.agent.name must equal metadata.name");
  });

  it("take web_search's fixed arguments of each scalar type (a union the structural schema keeps as written)", async () => {
    // A server-side dry run: the policy is checked and defaulted as stored, and nothing is written for other tests to see.
    const { custom } = testCluster();
    const webSearch = { server: "search", tool: "search_files", queryArgument: "pattern", arguments: { path: "/srv/docs", limit: 5, recursive: true } };
    const body = { apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { mcpServers: [{ name: "search", command: "mcp-server-filesystem" }], webSearch } };
    const created = (await custom.createClusterCustomObject({ ...OURS.policies, body, dryRun: "All", fieldValidation: "Strict" })) as { spec: { webSearch: unknown } };
    expect(created.spec.webSearch).toEqual(webSearch);
  });

  it("take spec.integrity and a tool's integrity classification, and refuse an effect that is none, naming the field", async () => {
    // A server-side dry run, as above: nothing is written for other tests to see.
    const { custom } = testCluster();
    const integrity = { enforce: true, onHold: "deny", allowlist: [{ tool: "bank__send_money", to: ["GB29*"] }], rules: [{ name: "small", expression: 'args_provenance.recipient == "trusted"' }] };
    const spec = { taint: { toolOverrides: { bank__get_balance: { effect: "read", integrity: "trusted" }, http_get: { checkTargets: true } } }, integrity };
    const body = { apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec };
    const created = (await custom.createClusterCustomObject({ ...OURS.policies, body, dryRun: "All", fieldValidation: "Strict" })) as { spec: typeof spec };
    expect(created.spec.integrity).toMatchObject(integrity);
    expect(created.spec.taint.toolOverrides).toEqual(spec.taint.toolOverrides);
    const bad = { ...body, spec: { taint: { toolOverrides: { bank__send_money: { effect: "pay" } } } } };
    const err = await expectApiError(custom.createClusterCustomObject({ ...OURS.policies, body: bad, dryRun: "All" }));
    expect(err.code).toBe(422);
    expect(err.message).toContain("spec.taint.toolOverrides.bank__send_money.effect: Unsupported value: \"pay\"");
  });

  it("keep the LeviathPolicy a singleton named cluster", async () => {
    const { custom } = testCluster();
    const err = await expectApiError(custom.createClusterCustomObject({ ...OURS.policies, body: { apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "other" }, spec: {} } }));
    expect(err.code).toBe(422);
    expect(err.message).toContain("singleton named 'cluster'");
  });

  it("refuse a warm pool the schema forbids, naming the field", async () => {
    const { custom } = testCluster();
    const policy = (pools: unknown) => ({ apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { pools } });
    const badAgent = await expectApiError(custom.createClusterCustomObject({ ...OURS.policies, body: policy([{ agent: "Reviewer", size: 1 }]) }));
    expect(badAgent.code).toBe(422);
    expect(badAgent.message).toContain("spec.pools[0].agent");
    const badSize = await expectApiError(custom.createClusterCustomObject({ ...OURS.policies, body: policy([{ agent: "team-a/reviewer", size: 33 }]) }));
    expect(badSize.code).toBe(422);
    expect(badSize.message).toContain("spec.pools[0].size");
  });

  it("print the columns a person wants", async () => {
    const { custom } = testCluster();
    await custom.createNamespacedCustomObject({ ...OURS.runs, namespace, body: { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: "r1" }, spec: { agentRef: { name: "verbatim" } } } });
    const runs = await kubectl(["get", "runs", "-n", namespace]);
    expect(runs.stdout.split("\n")[0]).toMatch(/^NAME\s+AGENT\s+PHASE\s+REASON\s+STAGE\s+TAINT\s+AGE$/);
    const agents = await kubectl(["get", "agents", "-n", namespace]);
    expect(agents.stdout.split("\n")[0]).toMatch(/^NAME\s+READY\s+REASON\s+READS\s+STAGES\s+AGE$/);
  });

  it("keep status behind its subresource: a spec write cannot set it", async () => {
    const { custom } = testCluster();
    const created = (await custom.createNamespacedCustomObject({
      ...OURS.runs, namespace, body: { apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: "r2" }, spec: { agentRef: { name: "x" } }, status: { phase: "Succeeded" } },
    })) as { status?: unknown };
    expect(created.status).toBeUndefined();
  });
});
