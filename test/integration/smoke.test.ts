// Proves the harness runs a real control plane: CRD schema validation, Pod Security admission,
// server-side apply conflicts and garbage collection all come from the real components.
import { PatchStrategy } from "@kubernetes/client-node";
import type { V1ConfigMap, V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  apiError, createRestrictedNamespace, deleteNamespace, expectApiError, helm, installCrds, kubectl, testCluster, waitFor,
  waitForCondition,
} from "./harness/index.ts";

const WIDGETS = { group: "smoke.leviath.test", version: "v1alpha1", plural: "widgets" };

let namespace = "";

beforeAll(async () => {
  namespace = await createRestrictedNamespace("smoke");
});

afterAll(async () => {
  if (namespace) await deleteNamespace(namespace);
  // Leave an existing cluster (KUBECONFIG) as we found it.
  await testCluster().apiext.deleteCustomResourceDefinition({ name: "widgets.smoke.leviath.test" }).catch((error: unknown) => {
    if (apiError(error)?.code !== 404) throw error;
  });
});

describe("the control plane under test", () => {
  it("validates custom objects against the CRD's schema", async () => {
    const applied = await installCrds("test/fixtures/control-plane");
    expect(applied.map((o) => o.metadata?.name)).toEqual(["widgets.smoke.leviath.test"]);
    const crd = await waitForCondition(
      { apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", metadata: { name: "widgets.smoke.leviath.test" } },
      "Established",
    );
    expect(crd.metadata?.name).toBe("widgets.smoke.leviath.test");
    // Fields whose wire names are not identifiers reach the server intact (client-node renames them).
    const listType = await kubectl([
      "get", "crd", "widgets.smoke.leviath.test", "-o",
      "jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.conditions.x-kubernetes-list-type}",
    ]);
    expect(listType.stdout).toBe("map");

    const { custom } = testCluster();
    const widget = (spec: Record<string, unknown>, name: string) => ({
      apiVersion: "smoke.leviath.test/v1alpha1", kind: "Widget", metadata: { name }, spec,
    });
    const tooBig = await expectApiError(
      custom.createNamespacedCustomObject({ ...WIDGETS, namespace, body: widget({ size: 42 }, "too-big") }),
    );
    expect(tooBig.code).toBe(422);
    expect(tooBig.reason).toBe("Invalid");
    expect(tooBig.message).toContain("spec.size: Invalid value: 42");

    const badColor = await expectApiError(
      custom.createNamespacedCustomObject({ ...WIDGETS, namespace, body: widget({ size: 3, color: "purple" }, "bad-color") }),
    );
    expect(badColor.code).toBe(422);
    expect(badColor.message).toContain('spec.color: Unsupported value: "purple"');

    const missing = await expectApiError(
      custom.createNamespacedCustomObject({ ...WIDGETS, namespace, body: widget({ color: "red" }, "no-size") }),
    );
    expect(missing.code).toBe(422);
    expect(missing.message).toContain("spec.size: Required value");

    const created = (await custom.createNamespacedCustomObject({
      ...WIDGETS, namespace, body: widget({ size: 3, color: "green" }, "good"),
    })) as { metadata: { uid: string }; spec: { size: number } };
    expect(created.metadata.uid).not.toBe("");
    expect(created.spec.size).toBe(3);
  });

  it("rejects a pod the restricted Pod Security profile forbids and admits a compliant one", async () => {
    const { core } = testCluster();
    const privileged: V1Pod = {
      metadata: { name: "privileged" },
      spec: { containers: [{ name: "app", image: "registry.k8s.io/pause:3.10", securityContext: { privileged: true } }] },
    };
    const rejected = await expectApiError(core.createNamespacedPod({ namespace, body: privileged }));
    expect(rejected.code).toBe(403);
    expect(rejected.message).toContain('violates PodSecurity "restricted:latest"');
    expect(rejected.message).toContain("privileged");

    const compliant: V1Pod = {
      metadata: { name: "compliant" },
      spec: {
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: "RuntimeDefault" } },
        containers: [{
          name: "app",
          image: "registry.k8s.io/pause:3.10",
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
        }],
      },
    };
    const admitted = await core.createNamespacedPod({ namespace, body: compliant });
    expect(admitted.metadata?.uid).toBeTruthy();
    // No node runs here: the pod is stored and stays Pending.
    const read = await core.readNamespacedPod({ name: "compliant", namespace });
    expect(read.status?.phase).toBe("Pending");
  });

  it("reports a server-side apply conflict between two field managers as 409", async () => {
    const { objects, core } = testCluster();
    const configMap = (value: string): V1ConfigMap => ({
      apiVersion: "v1", kind: "ConfigMap", metadata: { name: "contested", namespace }, data: { key: value },
    });
    await objects.patch(configMap("from-a"), undefined, undefined, "smoke-manager-a", false, PatchStrategy.ServerSideApply);

    const conflict = await expectApiError(
      objects.patch(configMap("from-b"), undefined, undefined, "smoke-manager-b", false, PatchStrategy.ServerSideApply),
    );
    expect(conflict.code).toBe(409);
    expect(conflict.reason).toBe("Conflict");
    expect(conflict.message).toContain('conflict with "smoke-manager-a"');
    expect(conflict.message).toContain(".data.key");
    expect((await core.readNamespacedConfigMap({ name: "contested", namespace })).data).toEqual({ key: "from-a" });

    await objects.patch(configMap("from-b"), undefined, undefined, "smoke-manager-b", true, PatchStrategy.ServerSideApply);
    expect((await core.readNamespacedConfigMap({ name: "contested", namespace })).data).toEqual({ key: "from-b" });
  });

  it("garbage-collects the dependents of a deleted owner", async () => {
    const { core } = testCluster();
    const owner = await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "owner" }, data: { role: "owner" } } });
    const ownerReferences = [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata!.uid! }];
    for (const name of ["dependent-1", "dependent-2"]) {
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name, ownerReferences } } });
    }
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "bystander" } } });

    await core.deleteNamespacedConfigMap({ name: "owner", namespace });

    for (const name of ["dependent-1", "dependent-2"]) {
      await waitFor(async () => {
        try {
          await core.readNamespacedConfigMap({ name, namespace });
          return false;
        } catch (error) {
          if (apiError(error)?.code === 404) return true;
          throw error;
        }
      }, { timeoutMs: 90_000, description: `the garbage collector to delete ${name}` });
    }
    const bystander = await core.readNamespacedConfigMap({ name: "bystander", namespace });
    expect(bystander.metadata?.name).toBe("bystander");
  });

  it("exposes kubectl and helm configured for the cluster", async () => {
    const labels = await kubectl(["get", "namespace", namespace, "-o", "jsonpath={.metadata.labels}"]);
    expect(JSON.parse(labels.stdout)).toMatchObject({ "pod-security.kubernetes.io/enforce": "restricted" });

    const releases = await helm(["list", "--namespace", namespace, "--output", "json"]);
    expect(JSON.parse(releases.stdout)).toEqual([]);
  });
});
