// Who may loosen the LeviathPolicy's enforcement mode, as the chart ships it (docs/security.md, "Who may loosen a
// policy"), against the real API server: the chart's enforcement admission policy and its loosener role, rendered
// with the real helm and applied, and each user impersonated. An editor of the policy may tighten the mode (audit ->
// warn -> enforce) and edit the rest, never loosen it; the loosener may.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installCrds, kubectl, uniqueName, waitFor } from "../harness/index.ts";
import { renderChart } from "./chart-harness.ts";

const RELEASE = uniqueName("enforce");
const FULLNAME = `${RELEASE}-leviath-operator`;
const EDITOR = `${RELEASE}-policy-editor`;
let rendered = "";

const policy = (enforcement: string, extra: Record<string, unknown> = {}) => ({ apiVersion: "leviath.dev/v1alpha1", kind: "LeviathPolicy", metadata: { name: "cluster" }, spec: { enforcement, ...extra } });
const setMode = (user: string, enforcement: string) => kubectl(["patch", "leviathpolicy", "cluster", "--type=merge", "-p", JSON.stringify({ spec: { enforcement } }), "--as", user], { allowFailure: true });
const modeOf = async () => (await kubectl(["get", "leviathpolicy", "cluster", "-o", "jsonpath={.spec.enforcement}"])).stdout;

async function bindCluster(user: string, clusterRole: string): Promise<void> {
  const binding = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: `${user}-${clusterRole}`.slice(0, 63) }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRole }, subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }] };
  await kubectl(["create", "-f", "-"], { input: JSON.stringify(binding) });
}

beforeAll(async () => {
  await installCrds("charts/leviath-operator/crds/");
  await kubectl(["delete", "leviathpolicy", "cluster", "--ignore-not-found"]);
  rendered = await renderChart(RELEASE, "leviath-system", ["--show-only", "templates/enforcement-policy.yaml"]);
  await kubectl(["apply", "-f", "-"], { input: rendered });
  // An admin who may edit the policy (the chart ships no such role: cluster admins hold it).
  const editor = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: EDITOR }, rules: [{ apiGroups: ["leviath.dev"], resources: ["leviathpolicies"], verbs: ["get", "list", "patch", "update"] }] };
  await kubectl(["create", "-f", "-"], { input: JSON.stringify(editor) });
  await bindCluster("dana", EDITOR);
  await bindCluster("frank", EDITOR);
  await bindCluster("frank", `${FULLNAME}-policy-loosener`);
  await kubectl(["create", "-f", "-"], { input: JSON.stringify(policy("enforce", { toolPermissions: { shell: "ask" } })) });
  // The policy takes effect a moment after it is created: until dana's loosening is refused, it has not.
  await waitFor(async () => {
    const r = await kubectl(["patch", "leviathpolicy", "cluster", "--type=merge", "-p", '{"spec":{"enforcement":"audit"}}', "--as", "dana", "--dry-run=server"], { allowFailure: true });
    return r.exitCode !== 0 ? r : undefined;
  }, { timeoutMs: 30_000, description: "the enforcement admission policy to take effect" });
}, 300_000);

afterAll(async () => {
  await kubectl(["delete", "leviathpolicy", "cluster", "--ignore-not-found"], { allowFailure: true });
  for (const name of [`dana-${EDITOR}`, `frank-${EDITOR}`, `frank-${FULLNAME}-policy-loosener`]) await kubectl(["delete", "clusterrolebinding", name.slice(0, 63), "--ignore-not-found"], { allowFailure: true });
  await kubectl(["delete", "clusterrole", EDITOR, "--ignore-not-found"], { allowFailure: true });
  if (rendered) await kubectl(["delete", "-f", "-", "--ignore-not-found"], { input: rendered, allowFailure: true });
});

describe("the enforcement admission policy and the loosener role", () => {
  it("refuse an editor without the verb loosening enforce -> warn and enforce -> audit, naming the verb", async () => {
    for (const to of ["warn", "audit"]) {
      const r = await setMode("dana", to);
      expect(r.exitCode, to).not.toBe(0);
      expect(r.stderr).toContain(`${FULLNAME}-enforcement`);
      expect(r.stderr).toContain(`loosening spec.enforcement of LeviathPolicy cluster from enforce to ${to} needs the verb loosen on leviathpolicies`);
      expect(r.stderr).toContain("dana may not");
    }
    expect(await modeOf()).toBe("enforce");
  });

  it("let the editor change the rest of the policy while it stays enforced", async () => {
    const r = await kubectl(["patch", "leviathpolicy", "cluster", "--type=merge", "-p", '{"spec":{"toolPermissions":{"shell":"deny"}}}', "--as", "dana"], { allowFailure: true });
    expect(r.exitCode, r.stderr).toBe(0);
  });

  it("let the loosener move the mode to audit", async () => {
    const r = await setMode("frank", "audit");
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await modeOf()).toBe("audit");
  });

  it("let the editor tighten audit -> warn -> enforce, and refuse warn -> audit", async () => {
    expect((await setMode("dana", "warn")).exitCode).toBe(0);
    const back = await setMode("dana", "audit");
    expect(back.exitCode).not.toBe(0);
    expect(back.stderr).toContain("from warn to audit needs the verb loosen");
    expect((await setMode("dana", "enforce")).exitCode).toBe(0);
    expect(await modeOf()).toBe("enforce");
  });

  it("refuse an unknown mode in the schema, whoever asks", async () => {
    const r = await setMode("frank", "log-only");
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toMatch(/spec\.enforcement: Unsupported value: "log-only"/);
  });
});
