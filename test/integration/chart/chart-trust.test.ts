// What the chart holds against the parties docs/security.md distrusts, with the real helm and API server: a typo
// in the policy values fails the install naming the key; the installed strict-keys admission policy refuses a typo
// from any client; and each role the chart ships, impersonated, may do what docs/security.md says and never reach
// a pod (exec, attach, port-forward, logs), so one user cannot get into another user's engine or sandbox pods.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { STRICT_KEYS_POLICY_NAME } from "../../../src/api/admission-policy.ts";
import { helm, kubectl, testCluster, waitFor } from "../harness/index.ts";
import { OURS } from "../controller/operator-harness.ts";
import { CHART, useTestRelease } from "./chart-harness.ts";

const fixture = useTestRelease("trust");
const RELEASE = fixture.name;
const FULLNAME = fixture.fullname;
const SANDBOX = fixture.sandbox;

const install = (args: string[]) => helm(["install", RELEASE, CHART, "--namespace", fixture.namespace(), "--set", `sandboxNamespace.name=${SANDBOX}`, ...args], { allowFailure: true, timeoutMs: 120_000 });
const policyExists = () => testCluster().custom.getClusterCustomObject({ ...OURS.policies, name: "cluster" }).then(() => true, () => false);

describe("helm install", () => {
  it("with a typo in policy.spec fails, naming the key, and creates no policy", async () => {
    const result = await install(["--set", "policy.spec.toolPermisions.shell=deny"]);
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toMatch(/policy\/spec.*toolPermisions|toolPermisions.*policy\/spec/s);
    expect(await policyExists()).toBe(false);
  });

  it("with a typo deep in policy.document fails, naming its path", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lev-doc-"));
    const file = join(dir, "policy.yaml");
    writeFileSync(file, stringify({ apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { taint: { allowlist: [{ tool: "a" }, { tool: "b", maxSensitivty: "private" }] } } }));
    const result = await install(["--set-file", `policy.document=${file}`]);
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toContain("policy.document: spec.taint.allowlist[1]: unknown key 'maxSensitivty' (valid: channel, maxSensitivity, to, tool)");
    expect(await policyExists()).toBe(false);
  });

  it("installs the strict-keys admission policy, which refuses a typo from kubectl --validate=false", async () => {
    // Without the webhook (on by default): no node runs the controller's pods here, so it could not answer, and it
    // fails closed for the Run created below; what this file checks is the admission policies and the roles.
    const result = await install(["--set", "admission.webhook.enabled=false"]);
    expect(result.exitCode, result.stderr).toBe(0);
    const agent = JSON.stringify({ apiVersion: "leviath.dev/v1alpha1", kind: "Agent", metadata: { name: "typo", namespace: SANDBOX }, spec: { sandbox: { netwrok: false } } });
    const refused = await waitFor(async () => {
      // A dry run, so that an early success (before the policy takes effect) stores nothing.
      const r = await kubectl(["create", "--validate=false", "--dry-run=server", "-f", "-"], { input: agent, allowFailure: true });
      return r.exitCode !== 0 ? r : undefined;
    }, { timeoutMs: 30_000, description: "the chart's admission policy to take effect" });
    expect(refused.stderr).toContain(STRICT_KEYS_POLICY_NAME);
    expect(refused.stderr).toContain("spec.sandbox: unknown key 'netwrok'");
    const created = await kubectl(["apply", "--validate=false", "-f", "-"], { input: agent, allowFailure: true });
    expect(created.exitCode).not.toBe(0);
    expect(created.stderr).toContain("spec.sandbox: unknown key 'netwrok'");
  });
});

/** What each subject may do in the sandbox namespace: `kubectl auth can-i` (a SubjectAccessReview) as that user. */
const POD_ACCESS = [["create", "pods", "exec"], ["get", "pods", "exec"], ["create", "pods", "attach"], ["create", "pods", "portforward"], ["get", "pods", "log"]] as const;

async function canI(user: string, verb: string, resource: string, subresource?: string): Promise<boolean> {
  const args = ["auth", "can-i", verb, resource, "-n", SANDBOX, "--as", user, ...(subresource ? ["--subresource", subresource] : [])];
  return (await kubectl(args, { allowFailure: true })).stdout.trim() === "yes";
}

async function bind(user: string, clusterRole: string): Promise<void> {
  const binding = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: `${user}-${clusterRole}`.slice(0, 63), namespace: SANDBOX }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRole }, subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }] };
  await kubectl(["create", "-f", "-"], { input: JSON.stringify(binding) });
}

describe("the roles the chart ships", () => {
  beforeAll(async () => {
    await bind("alice", `${FULLNAME}-edit`);
    await bind("bob", `${FULLNAME}-view`);
    await bind("carol", `${FULLNAME}-approver`);
    await bind("dave", "edit");
  });

  it.each([
    ["alice", "edit", [["create", "runs"], ["delete", "runs"], ["create", "agents"], ["get", "runs"]], [["create", "approvals"], ["patch", "runs", "status"], ["create", "leviathpolicies"]]],
    ["bob", "view", [["get", "runs"], ["list", "agents"], ["watch", "approvals"], ["get", "leviathpolicies"]], [["create", "runs"], ["create", "approvals"]]],
    ["carol", "approver", [["create", "approvals"], ["get", "runs"]], [["update", "approvals"], ["delete", "approvals"], ["create", "runs"]]],
  ] as const)("%s (%s) may do what docs/security.md says and reaches no pod", async (user, _role, allowed, refused) => {
    for (const [verb, resource] of allowed) expect(await canI(user, verb, resource), `${user} ${verb} ${resource}`).toBe(true);
    for (const [verb, resource, sub] of refused as readonly (readonly [string, string, string?])[]) expect(await canI(user, verb, resource, sub), `${user} ${verb} ${resource}`).toBe(false);
    for (const [verb, resource, sub] of POD_ACCESS) expect(await canI(user, verb, resource, sub), `${user} ${verb} ${resource}/${sub}`).toBe(false);
  });

  it("are not aggregated into the built-in edit role, whose holders can exec into any pod, so those holders do not create Runs", async () => {
    expect(await canI("dave", "create", "pods", "exec")).toBe(true);
    expect(await canI("dave", "create", "runs")).toBe(false);
    expect(await canI("dave", "create", "approvals")).toBe(false);
  });

  it("leave a Run's creator unable to exec into its engine pod (an impersonated request)", async () => {
    await testCluster().core.createNamespacedPod({
      namespace: SANDBOX,
      body: {
        metadata: { name: "someone-engine" },
        spec: { containers: [{ name: "agent", image: "registry.k8s.io/pause:3.10", securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] }, runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } } }] },
      },
    });
    const run = JSON.stringify({ apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: "mine", namespace: SANDBOX }, spec: { agentRef: { name: "any" } } });
    const created = await kubectl(["create", "--as", "alice", "-f", "-"], { input: run, allowFailure: true });
    expect(created.exitCode, created.stderr).toBe(0);
    // Straight at the subresources (no GET of the pod first, as kubectl exec and logs would do).
    const pod = `/api/v1/namespaces/${SANDBOX}/pods/someone-engine`;
    const requests = [
      ["create", "--raw", `${pod}/exec?command=true&container=agent&stdout=true`, "-f", "-"],
      ["create", "--raw", `${pod}/attach?container=agent&stdout=true`, "-f", "-"],
      ["create", "--raw", `${pod}/portforward?ports=8080`, "-f", "-"],
      ["get", "--raw", `${pod}/log`],
    ];
    for (const args of requests) {
      const result = await kubectl([...args, "--as", "alice"], { input: "{}", allowFailure: true, timeoutMs: 20_000 });
      expect(result.exitCode, args.join(" ")).not.toBe(0);
      expect(result.stderr, args.join(" ")).toMatch(/forbidden: User "alice" cannot (create|get) resource "pods\/(exec|attach|portforward|log)"/);
    }
    // The same exec request as the cluster admin passes authorization (and fails later: no node runs the pod).
    const admin = await kubectl(requests[0]!, { input: "{}", allowFailure: true, timeoutMs: 20_000 });
    expect(admin.stderr).not.toMatch(/forbidden/i);
  });
});
