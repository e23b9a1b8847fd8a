// Agents validated against the LeviathPolicy by the operator: upstream's finding codes on status, a policy change
// re-evaluating every Agent, an invalid policy keeping the last valid one, Runs waiting for what they lack.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRestrictedNamespace, deleteNamespace, installCrds, testCluster, waitFor } from "../harness/index.ts";
import { applyPolicy, childrenOf, conditionOf, createAgent, createRun, OURS, readCustom, waitForCustom, startTestOperator, type Custom, type TestOperator } from "./operator-harness.ts";

let namespace = "";
let op: TestOperator;

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("agents");
  op = await startTestOperator();
});

afterAll(async () => {
  await op?.stop();
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  if (namespace) await deleteNamespace(namespace);
});

const waitForAgent = (name: string, check: (a: Custom) => boolean, description: string): Promise<Custom> => waitForCustom("agents", namespace, name, check, description);

describe("an Agent", () => {
  it("with a regex read path that escapes its anchors reports the finding that names it, and its Runs wait", async () => {
    await createAgent(namespace, "escaper", { image: "r:1", readPaths: { allow: ["/data/ok", "regex:/x)|(.*"] } });
    const agent = await waitForAgent("escaper", (a) => a.status?.valid === false, "the Agent to be found invalid");
    expect(agent.status?.findings).toEqual([{
      severity: "error",
      code: "blueprint-invalid",
      message: "spec.readPaths.allow[1]: read_paths entry 'regex:/x)|(.*': regex escapes its anchors (unbalanced ')' or verbose-mode comment); write one complete pattern",
    }]);
    expect(conditionOf(agent, "Valid")).toMatchObject({ status: "False", reason: "InvalidSpec" });

    await createRun(namespace, "escaper-run", { agentRef: { name: "escaper" } });
    const run = await waitFor(async () => {
      const r = await readCustom("runs", namespace, "escaper-run");
      return r.status?.phase ? r : undefined;
    }, { description: "the Run's status" });
    expect(run.status?.phase).toBe("Pending");
    expect(conditionOf(run, "PolicyResolved")).toMatchObject({ status: "False", reason: "InvalidSpec" });
    expect(conditionOf(run, "PolicyResolved")?.message).toContain("regex escapes its anchors");
    expect(await childrenOf(namespace, "escaper-run")).toEqual([]);
  });

  it("is re-evaluated when the policy changes, with grants keyed by namespace/name", async () => {
    await createAgent(namespace, "reader", { image: "r:1", readPaths: { allow: ["/data/design", "glob:/data/finance/**"] } });
    await waitForAgent("reader", (a) => (a.status?.readPaths as { display?: string } | undefined)?.display === "0/2", "0/2 granted");
    await applyPolicy({ readPaths: { perAgent: { [`${namespace}/reader`]: ["/data/design"], [`${namespace}/someone-else`]: ["glob:/data/finance/**"] } } });
    const agent = await waitForAgent("reader", (a) => (a.status?.readPaths as { display?: string } | undefined)?.display === "1/2", "1/2 granted after the policy change");
    expect(agent.status?.policyGeneration).toBe(1);
    expect((agent.status?.findings as { code: string; message: string }[])[0]).toEqual(expect.objectContaining({
      code: "read-paths-not-granted",
      message: "your config does not grant glob:/data/finance/**: reads matching them will be refused",
    }));
  });

  it("keeps the last valid policy when the policy becomes invalid, and says so on the policy", async () => {
    // The CRD cannot check map keys; the controller's parse does, and refuses the whole object.
    await applyPolicy({ readPaths: { perAgent: { "Not A Key": ["/x"] } } });
    const policy = await waitFor(async () => {
      const p = (await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as Custom;
      return conditionOf(p, "Valid")?.status === "False" ? p : undefined;
    }, { description: "the policy to be reported invalid" });
    expect(conditionOf(policy, "Valid")?.message).toMatch(/^spec\.readPaths\.perAgent\.Not A Key: .*; generation 1 stays in force$/);
    await new Promise((r) => setTimeout(r, 500));
    const agent = await readCustom("agents", namespace, "reader");
    expect(agent.status?.policyGeneration).toBe(1);
    expect((agent.status?.readPaths as { display: string }).display).toBe("1/2");
  });

  it("lets a Run created before its Agent start once the Agent exists", async () => {
    await createRun(namespace, "early", { agentRef: { name: "late" } });
    const waiting = await waitFor(async () => {
      const r = await readCustom("runs", namespace, "early");
      return r.status?.phase ? r : undefined;
    }, { description: "the early Run's status" });
    expect(conditionOf(waiting, "PolicyResolved")).toMatchObject({ status: "False", reason: "AgentNotFound" });
    await createAgent(namespace, "late", { image: "r:1" });
    const run = await waitFor(async () => {
      const r = await readCustom("runs", namespace, "early");
      return conditionOf(r, "PolicyResolved")?.status === "True" ? r : undefined;
    }, { description: "the early Run to resolve" });
    expect(run.status?.policy).toEqual({ name: "cluster", generation: 1 });
    expect(conditionOf(run, "SandboxReady")).toMatchObject({ status: "True", reason: "NoSandbox" });
    const refs = (await childrenOf(namespace, "early")).map((c) => c.ref);
    expect(refs).toEqual(["ConfigMap/early-policy", "PersistentVolumeClaim/early-workspace", "Pod/early-engine", "Role/early-sidecar", "RoleBinding/early-sidecar", "ServiceAccount/early-sidecar"]);
  });

  it("names misspelt tool names with the nearest tool, and a grant no volume backs, on the Agent and on the policy", async () => {
    const key = `${namespace}/typos`;
    await applyPolicy({ toolPermissions: { web_fetc: "deny" }, readPaths: { perAgent: { [key]: ["/data/notes"] } } });
    await createAgent(namespace, "typos", { image: "r:1", toolPermissions: { read_fiel: "ask" }, readPaths: { allow: ["/data/notes"] }, stages: [{ name: "main", availableTools: ["shel"], runtime: { model: { models: [{ provider: "anthropic", model: "m" }] } } }] });
    const agent = await waitForAgent("typos", (a) => (a.status?.findings as unknown[] | undefined)?.length === 4, "the Agent's four findings");
    const findings = agent.status?.findings as { code: string; message: string; fix?: string }[];
    expect(findings.filter((f) => f.code === "unknown-tool-name").map((f) => [f.message.split(";")[0], f.fix])).toEqual([
      ["spec.toolPermissions.read_fiel: no tool is named 'read_fiel' (did you mean 'read_file'?)", "write spec.toolPermissions.read_file instead"],
      ["spec.stages[0].availableTools[0] 'shel': no tool is named 'shel' (did you mean 'shell'?)", "write spec.stages[0].availableTools[0] 'shell' instead"],
    ]);
    expect(findings.find((f) => f.code === "read-path-grant-unbacked")?.message).toMatch(/^spec\.readPaths\.perAgent\["[^"]+\/typos"\]\[0\] of the LeviathPolicy grants '\/data\/notes', but no entry of spec\.readPaths\.volumes mounts anything at \/data\/notes/);
    expect(conditionOf(agent, "Valid")).toMatchObject({ status: "True", message: "valid, with 3 warnings" });

    const policy = await waitFor(async () => {
      const p = (await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as Custom;
      return (p.status?.findings as unknown[] | undefined)?.length === 2 ? p : undefined;
    }, { description: "the policy's findings" });
    expect((policy.status?.findings as { code: string; message: string }[]).map((f) => f.code)).toEqual(["unknown-tool-name", "read-path-grant-unbacked"]);
    expect((policy.status?.findings as { message: string }[])[0]?.message).toMatch(/^spec\.toolPermissions\.web_fetc of the LeviathPolicy: no tool is named 'web_fetc' \(did you mean 'web_fetch'\?\)/);
    expect(conditionOf(policy, "Valid")).toMatchObject({ status: "True", message: "in force for new Runs, with 2 warnings (status.findings)" });

    // A volume behind the grant: both findings of it go.
    await applyPolicy({ toolPermissions: { web_fetch: "deny" }, readPaths: { perAgent: { [key]: ["/data/notes"] }, volumes: [{ path: "/data/notes", volume: { configMap: { name: "notes" } } }] } });
    await waitForAgent("typos", (a) => !(a.status?.findings as { code: string }[]).some((f) => f.code === "read-path-grant-unbacked"), "the unbacked finding gone");
    await waitFor(async () => {
      const p = (await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as Custom;
      return p.status?.findings === undefined && conditionOf(p, "Valid")?.message === "in force for new Runs";
    }, { description: "the policy's findings gone" });
  });
});
