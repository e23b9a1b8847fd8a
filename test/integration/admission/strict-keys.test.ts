// A misspelled key never leaves an object looser than its file reads, whatever the client asked for: the CRDs keep
// unknown keys instead of pruning them, the controller marks such an object invalid naming the key (no Run starts
// from it), and the generated strict-keys ValidatingAdmissionPolicy refuses it at admission with its path, for
// kubectl --validate=false and for a raw request without fieldValidation alike.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { STRICT_KEYS_POLICY_NAME } from "../../../src/api/admission-policy.ts";
import { STRICT_KEYS_POLICY_FILE } from "../../../src/api/crd-files.ts";
import { createKubeClient } from "../../../src/kube/client.ts";
import { KubeApiError } from "../../../src/kube/errors.ts";
import { createRestrictedNamespace, deleteNamespace, fillApprovalTemplate, installCrds, kubectl, REPO_ROOT, testCluster, waitFor } from "../harness/index.ts";
import { childrenOf, conditionOf, OURS, readCustom, startTestOperator, waitForCustom, type Custom, type TestOperator } from "../controller/operator-harness.ts";

let namespace = "";
let op: TestOperator;
const API = "leviath.dev/v1alpha1";

beforeAll(async () => {
  await installCrds("crds/");
  namespace = await createRestrictedNamespace("strict");
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  op = await startTestOperator();
});

afterAll(async () => {
  await op?.stop();
  await kubectl(["delete", "--ignore-not-found", "-f", join(REPO_ROOT, STRICT_KEYS_POLICY_FILE)], { allowFailure: true });
  await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  if (namespace) await deleteNamespace(namespace);
});

/** `kubectl apply --validate=false` of one object (kubectl then asks the server to ignore unknown fields). */
const applyLoose = (obj: Record<string, unknown>, extra: string[] = []) =>
  kubectl(["apply", "--validate=false", "-n", namespace, ...extra, "-f", "-"], { input: JSON.stringify(obj), allowFailure: true });

const agent = (name: string, spec: Record<string, unknown>) => ({ apiVersion: API, kind: "Agent", metadata: { name }, spec });

describe("without the admission policy (CRDs only)", () => {
  it("keeps a misspelled key of an Agent, and the controller marks the Agent invalid naming it; its Run waits with no pods", async () => {
    const applied = await applyLoose(agent("typo", { sandbox: { kind: "container", image: "alpine:3", netwrok: false } }));
    expect(applied.exitCode, applied.stderr).toBe(0);
    const stored = await readCustom("agents", namespace, "typo");
    expect((stored.spec?.["sandbox"] as Record<string, unknown>)["netwrok"]).toBe(false);
    const invalid = await waitForCustom("agents", namespace, "typo", (a) => a.status?.valid === false, "the Agent to be found invalid");
    expect(conditionOf(invalid, "Valid")).toMatchObject({ status: "False", reason: "InvalidSpec" });
    expect(conditionOf(invalid, "Valid")?.message).toMatch(/^spec\.sandbox: Unrecognized key: "netwrok"/);

    await applyLoose({ apiVersion: API, kind: "Run", metadata: { name: "typo-run" }, spec: { agentRef: { name: "typo" } } });
    const run = await waitForCustom("runs", namespace, "typo-run", (r) => r.status?.phase !== undefined, "the Run's status");
    expect(run.status?.phase).toBe("Pending");
    expect(conditionOf(run, "PolicyResolved")?.message).toContain("netwrok");
    expect(await childrenOf(namespace, "typo-run")).toEqual([]);
  });

  it("keeps a misspelled key of a Run and fails the Run naming it", async () => {
    await applyLoose(agent("plain", {}));
    await applyLoose({ apiVersion: API, kind: "Run", metadata: { name: "moed" }, spec: { agentRef: { name: "plain" }, moed: "yolo" } });
    const run = await waitForCustom("runs", namespace, "moed", (r) => r.status?.phase !== undefined, "the Run's status");
    expect(run.status?.phase).toBe("Failed");
    expect(conditionOf(run, "PolicyResolved")).toMatchObject({ status: "False", reason: "InvalidSpec" });
    expect(conditionOf(run, "PolicyResolved")?.message).toMatch(/^spec: Unrecognized key: "moed"/);
    expect(await childrenOf(namespace, "moed")).toEqual([]);
  });

  it("keeps a misspelled key of the LeviathPolicy, which is then not in force", async () => {
    const applied = await applyLoose({ apiVersion: API, kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { toolPermisions: { shell: "deny" } } });
    expect(applied.exitCode, applied.stderr).toBe(0);
    const policy = await waitFor(async () => {
      const p = (await testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" })) as Custom;
      return conditionOf(p, "Valid")?.status === "False" ? p : undefined;
    }, { description: "the policy to be found invalid" });
    expect(conditionOf(policy, "Valid")?.message).toMatch(/^spec: Unrecognized key: "toolPermisions"/);
    await testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" });
  });
});

describe("with the strict-keys admission policy", () => {
  beforeAll(async () => {
    await kubectl(["apply", "--server-side", "-f", join(REPO_ROOT, STRICT_KEYS_POLICY_FILE)]);
    // A policy takes effect shortly after it is created: wait until a dry run of a typo is refused.
    await waitFor(async () => (await applyLoose(agent("probe", { sandbox: { netwrok: false } }), ["--dry-run=server"])).exitCode !== 0 || undefined, { timeoutMs: 30_000, description: `the ${STRICT_KEYS_POLICY_NAME} policy to take effect` });
  });

  it.each([
    ["an Agent's sandbox", agent("a1", { sandbox: { netwrok: false } }), "spec.sandbox: unknown key 'netwrok'"],
    ["an Agent's stage sandbox, by index", agent("a2", { stages: [{ name: "a" }, { name: "b", sandbox: { kind: "container", netwrok: false } }] }), "spec.stages[1].sandbox: unknown key 'netwrok'"],
    ["an Agent's tool permissions", agent("a3", { toolPermisions: { shell: "deny" } }), "spec: unknown key 'toolPermisions'"],
    ["a key beside spec", { ...agent("a4", {}), specc: { image: "x" } }, "the object: unknown key 'specc'"],
    ["a Run's mode", { apiVersion: API, kind: "Run", metadata: { name: "r1" }, spec: { agentRef: { name: "plain" }, moed: "yolo" } }, "spec: unknown key 'moed'"],
    ["a Run's agentRef", { apiVersion: API, kind: "Run", metadata: { name: "r2" }, spec: { agentRef: { name: "plain", namespace: "other" } } }, "spec.agentRef: unknown key 'namespace'"],
    ["an Approval's reason", { apiVersion: API, kind: "Approval", metadata: { name: "ap1" }, spec: { runRef: { name: "r" }, approvalId: "x", decision: "deny", reasn: "no" } }, "spec: unknown key 'reasn'"],
    ["the policy's tool permissions", { apiVersion: API, kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { toolPermisions: { shell: "deny" } } }, "spec: unknown key 'toolPermisions'"],
    ["a policy tool override, by key", { apiVersion: API, kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { taint: { toolOverrides: { web_fetch: { sensitivty: "private" } } } } }, "spec.taint.toolOverrides.web_fetch: unknown key 'sensitivty'"],
    ["a policy allowlist rule, by index", { apiVersion: API, kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { taint: { allowlist: [{ tool: "a" }, { tool: "b", maxSensitivty: "private" }] } } }, "spec.taint.allowlist[1]: unknown key 'maxSensitivty'"],
  ])("refuses %s for kubectl --validate=false, naming the path", async (_what, obj, message) => {
    const result = await applyLoose(obj);
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain(STRICT_KEYS_POLICY_NAME);
    expect(result.stderr).toContain(message);
  });

  it("refuses a raw request that asks for no field validation, naming the path", async () => {
    const client = createKubeClient(testCluster().kc);
    const body = agent("raw", { sandbox: { kind: "container", netwrok: false } });
    const err = await client.request("POST", `/apis/${API}/namespaces/${namespace}/agents`, { body }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).code).toBe(422);
    expect((err as KubeApiError).message).toContain("spec.sandbox: unknown key 'netwrok' (valid: kind, image, engine, network, mounts, persist, onUnavailable)");
    await expect(readCustom("agents", namespace, "raw")).rejects.toThrow();
  });

  it("refuses an update that adds an unknown key to a stored object", async () => {
    const result = await kubectl(["patch", "agent", "plain", "-n", namespace, "--type=merge", "-p", JSON.stringify({ spec: { sandbox: { netwrok: false } } })], { allowFailure: true });
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain("spec.sandbox: unknown key 'netwrok'");
  });

  it("admits the shipped examples as they are, and the Approval template once its placeholders are filled", async () => {
    for (const file of ["agent.yaml", "run.yaml", "policy.yaml"]) {
      const obj = parse(readFileSync(join(REPO_ROOT, "examples", file), "utf8")) as { metadata: { namespace?: string } };
      delete obj.metadata.namespace;
      const result = await applyLoose(obj, ["--dry-run=server"]);
      expect(result.exitCode, `${file}: ${result.stderr}`).toBe(0);
    }
    // generateName: created, never applied.
    const approval = parse(fillApprovalTemplate({ run: "digest-docs", promptId: "tool-call-0001", reason: "a listing is fine" })) as { metadata: { namespace?: string } };
    delete approval.metadata.namespace;
    const created = await kubectl(["create", "--dry-run=server", "-n", namespace, "-f", "-"], { input: JSON.stringify(approval), allowFailure: true });
    expect(created.exitCode, created.stderr).toBe(0);
  });
});
