import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import { loadAllYaml, loadYaml, PatchStrategy } from "@kubernetes/client-node";
import type { KubernetesObject } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { REPO_ROOT } from "./control-plane.ts";
import { testCluster } from "./test-cluster.ts";
import type { TestCluster } from "./test-cluster.ts";
import { waitForCondition } from "./wait-for.ts";

/** The field manager the harness applies with. */
export const HARNESS_FIELD_MANAGER = "leviath-test-harness";

/**
 * Every object in a YAML file (multi-document; empty documents skipped), as client-node models. The
 * conversion matters: client-node serializes known kinds through its generated models, whose property
 * names differ from the wire names where those are not identifiers (`enum` is `_enum`,
 * `x-kubernetes-list-type` is `xKubernetesListType`), and silently drops such fields of a plain object.
 */
export async function readManifests(file: string): Promise<KubernetesObject[]> {
  const text = await readFile(file, "utf8");
  // Parse with `yaml` first for errors that name the file and line; client-node re-reads it into its models.
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
  }
  return (loadAllYaml(text) as (KubernetesObject | null | undefined)[]).filter((o): o is KubernetesObject => o != null);
}

/** Converts a plain wire-format object (as the API server or a YAML file spells it) into a client-node model. */
export function toClientModel<T extends KubernetesObject>(wire: T): T {
  // JSON is YAML: loadYaml picks the model by apiVersion and kind and maps the wire names.
  return loadYaml<T>(JSON.stringify(wire));
}

/**
 * Applies client-node model objects ({@link readManifests}, {@link toClientModel}) with server-side apply
 * under `fieldManager`, forcing ownership as `kubectl apply --server-side --force-conflicts` does.
 */
export async function applyObjects(
  objects: KubernetesObject[], fieldManager = HARNESS_FIELD_MANAGER, cluster: TestCluster = testCluster(),
): Promise<KubernetesObject[]> {
  const applied: KubernetesObject[] = [];
  for (const obj of objects) {
    applied.push(await cluster.objects.patch(obj, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply));
  }
  return applied;
}

/**
 * Applies every `.yaml`/`.yml` file in `dir` (relative paths are from the repository root) with
 * server-side apply, and waits until each CustomResourceDefinition among them is Established. A missing
 * `crds/` (git keeps no empty folders) installs nothing; any other missing folder is an error.
 */
export async function installCrds(dir = "crds/", cluster: TestCluster = testCluster()): Promise<KubernetesObject[]> {
  const path = isAbsolute(dir) ? dir : join(REPO_ROOT, dir);
  if (!existsSync(path)) {
    if (dir === "crds/") return [];
    throw new Error(`installCrds: no directory ${path}`);
  }
  const files = (await readdir(path)).filter((f) => /\.ya?ml$/.test(f)).sort();
  const objects = (await Promise.all(files.map((f) => readManifests(join(path, f))))).flat();
  const applied = await applyObjects(objects, HARNESS_FIELD_MANAGER, cluster);
  for (const obj of applied) {
    if (obj.kind === "CustomResourceDefinition" && obj.metadata?.name) {
      await waitForCondition(
        { apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", metadata: { name: obj.metadata.name } },
        "Established", "True", { cluster, timeoutMs: 60_000 },
      );
    }
  }
  return applied;
}
