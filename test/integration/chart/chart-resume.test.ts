// Who may resume a Run, as the chart ships it (docs/controller.md, "Resuming a Run"), against the real API server:
// the chart's resume admission policy and its roles, rendered with the real helm and applied, and each user
// impersonated. The resumer may set leviath.dev/resume and change nothing else; the editor may edit but not resume;
// a resume carries no spec change; the viewer may do neither.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRestrictedNamespace, deleteNamespace, installCrds, kubectl, uniqueName, waitFor } from "../harness/index.ts";
import { renderChart } from "./chart-harness.ts";

const RELEASE = uniqueName("resume");
const FULLNAME = `${RELEASE}-leviath-operator`;
let namespace = "";
let rendered = "";

async function bind(user: string, clusterRole: string): Promise<void> {
  const binding = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: `${user}-${clusterRole}`.slice(0, 63), namespace }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRole }, subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }] };
  await kubectl(["create", "-f", "-"], { input: JSON.stringify(binding) });
}

const annotate = (user: string, run: string, token: string) => kubectl(["annotate", "run", run, "-n", namespace, `leviath.dev/resume=${token}`, "--overwrite", "--as", user], { allowFailure: true });
const patchAs = (user: string, run: string, patch: Record<string, unknown>) => kubectl(["patch", "run", run, "-n", namespace, "--type=merge", "-p", JSON.stringify(patch), "--as", user], { allowFailure: true });
const tokenOf = async (run: string) => (await kubectl(["get", "run", run, "-n", namespace, "-o", "jsonpath={.metadata.annotations.leviath\\.dev/resume}"])).stdout;

beforeAll(async () => {
  await installCrds("charts/leviath-operator/crds/");
  namespace = await createRestrictedNamespace("resume-rbac");
  rendered = await renderChart(RELEASE, namespace, ["--show-only", "templates/resume-policy.yaml", "--show-only", "templates/user-roles.yaml"]);
  await kubectl(["apply", "-f", "-"], { input: rendered });
  await bind("erin", `${FULLNAME}-resumer`);
  await bind("alice", `${FULLNAME}-edit`);
  await bind("bob", `${FULLNAME}-view`);
  await kubectl(["create", "-f", "-"], { input: JSON.stringify({ apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: "long", namespace }, spec: { agentRef: { name: "any" } } }) });
  // The policy takes effect a moment after it is created: until alice's resume is refused, it has not.
  await waitFor(async () => {
    const r = await kubectl(["annotate", "run", "long", "-n", namespace, "leviath.dev/resume=probe", "--overwrite", "--as", "alice", "--dry-run=server"], { allowFailure: true });
    return r.exitCode !== 0 ? r : undefined;
  }, { timeoutMs: 30_000, description: "the resume admission policy to take effect" });
}, 300_000);

afterAll(async () => {
  if (rendered) await kubectl(["delete", "-f", "-", "--ignore-not-found"], { input: rendered, allowFailure: true });
  if (namespace) await deleteNamespace(namespace);
});

describe("the resumer role and the resume admission policy", () => {
  it("let the resumer set leviath.dev/resume with kubectl annotate", async () => {
    const r = await annotate("erin", "long", "2026-12-01T11:00:00Z");
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await tokenOf("long")).toBe("2026-12-01T11:00:00Z");
  });

  it("refuse the resumer any other change of the Run: its spec, a label, another annotation", async () => {
    for (const patch of [{ spec: { desiredState: "Cancelled" } }, { metadata: { labels: { team: "x" } } }, { metadata: { annotations: { note: "x" } } }]) {
      const r = await patchAs("erin", "long", patch);
      expect(r.exitCode, JSON.stringify(patch)).not.toBe(0);
      expect(r.stderr).toContain(`${FULLNAME}-resume`);
      expect(r.stderr).toContain("erin may not update Run long: without update on runs, only the leviath.dev/resume annotation may change");
    }
  });

  it("refuse a resume that also changes the spec, even from someone who may do both", async () => {
    await bind("alice", `${FULLNAME}-resumer`);
    const r = await waitFor(async () => {
      const res = await patchAs("alice", "long", { metadata: { annotations: { "leviath.dev/resume": "both" } }, spec: { task: "something else" } });
      return res.stderr.includes("a resume changes only") ? res : undefined;
    }, { timeoutMs: 15_000, description: "the binding to take effect" });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain("a resume changes only the leviath.dev/resume annotation; change the spec in a request of its own");
    await kubectl(["delete", "rolebinding", `alice-${FULLNAME}-resumer`.slice(0, 63), "-n", namespace]);
  });

  it("refuse the editor a resume (editing is not resuming), and let the editor edit", async () => {
    const r = await waitFor(async () => {
      const res = await annotate("alice", "long", "by-alice");
      return res.exitCode !== 0 ? res : undefined;
    }, { timeoutMs: 15_000, description: "alice's resumer binding gone" });
    expect(r.stderr).toContain("setting the leviath.dev/resume annotation needs update on runs/resume");
    expect(r.stderr).toContain("alice may not resume Run long");
    const edit = await patchAs("alice", "long", { spec: { task: "edited" } });
    expect(edit.exitCode, edit.stderr).toBe(0);
    expect(await tokenOf("long")).toBe("2026-12-01T11:00:00Z");
  });

  it("refuse a Run created with the annotation by someone who may not resume", async () => {
    const run = JSON.stringify({ apiVersion: "leviath.dev/v1alpha1", kind: "Run", metadata: { name: "preset", namespace, annotations: { "leviath.dev/resume": "x" } }, spec: { agentRef: { name: "any" } } });
    const r = await kubectl(["create", "-f", "-", "--as", "alice"], { input: run, allowFailure: true });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain("alice may not resume Run preset");
  });

  it("leave the viewer unable to resume (no patch at all)", async () => {
    const r = await annotate("bob", "long", "by-bob");
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toMatch(/forbidden/i);
  });
});
