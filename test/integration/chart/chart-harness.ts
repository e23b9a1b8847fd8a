// Helpers of the chart tests: render the chart with the real helm, split the documents, apply them to the
// real API server, and find promtool.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { afterAll, beforeAll } from "vitest";
import { OURS } from "../controller/operator-harness.ts";
import { createRestrictedNamespace, deleteNamespace, helm, installCrds, kubectl, REPO_ROOT, testCluster, uniqueName } from "../harness/index.ts";
import type { ToolResult } from "../harness/index.ts";

/** The chart under test. */
export const CHART = join(REPO_ROOT, "charts/leviath-operator");

/** A rendered manifest, as plain wire-format YAML. */
export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
};

/** One rule of a Role or ClusterRole. */
export type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };

/** The rules of a Role or ClusterRole manifest. */
export const rulesOf = (m: Manifest): Rule[] => (m as Manifest & { rules: Rule[] }).rules;

/** Whether `rules` allow `verb` on `group/resource` (optionally for one name). */
export function allows(rules: Rule[], group: string, resource: string, verb: string, name?: string): boolean {
  return rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb)
    && (r.resourceNames === undefined || (name !== undefined && r.resourceNames.includes(name))));
}

/** `helm template <release> <chart> -n <namespace> <args>`; a failure throws with helm's message. */
export async function renderChart(release: string, namespace: string, args: string[] = []): Promise<string> {
  return (await helm(["template", release, CHART, "--namespace", namespace, ...args])).stdout;
}

/** Like {@link renderChart}, for values that must be refused: helm's result, whatever its exit status. */
export async function renderChartResult(args: string[]): Promise<ToolResult> {
  return helm(["template", "t", CHART, "--namespace", "leviath-system", ...args], { allowFailure: true });
}

/** The documents of a multi-document YAML stream, empty ones dropped. */
export function parseManifests(text: string): Manifest[] {
  const out: Manifest[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`rendered YAML does not parse: ${doc.errors[0]!.message}`);
    const value = doc.toJS() as Manifest | null;
    if (value) out.push(value);
  }
  return out;
}

/** The one manifest of `kind` (and `name`, when given); throws when there is none or more than one. */
export function findManifest(manifests: Manifest[], kind: string, name?: string): Manifest {
  const found = manifests.filter((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` ${name}` : ""}, found ${found.length}`);
  return found[0]!;
}

/** Manifests back to one YAML stream (JSON is YAML). */
export function toStream(manifests: Manifest[]): string {
  return manifests.map((m) => JSON.stringify(m)).join("\n---\n");
}

/**
 * `kubectl apply --server-side` of a stream, as a server-side dry run unless `persist`; strict field
 * validation is kubectl's default, so an unknown field fails. Returns kubectl's result (a failure throws
 * unless `allowFailure`).
 */
export async function applyStream(stream: string, opts: { persist?: boolean; allowFailure?: boolean } = {}): Promise<ToolResult> {
  const args = ["apply", "--server-side", "--field-manager=leviath-chart-test", "-f", "-"];
  if (!opts.persist) args.push("--dry-run=server");
  return kubectl(args, { input: stream, allowFailure: opts.allowFailure ?? false });
}

/**
 * The path of promtool (Debian's `prometheus` package). When it is missing and this runs as root, it is
 * installed the way CI does: `apt-get update && apt-get install -y --no-install-recommends prometheus`.
 */
export function findPromtool(): string {
  const which = () => spawnSync("sh", ["-c", "command -v promtool"], { encoding: "utf8" }).stdout.trim();
  let path = which();
  if (!path && process.getuid?.() === 0) {
    spawnSync("apt-get", ["update"], { stdio: "ignore", timeout: 300_000 });
    spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "prometheus"], {
      stdio: "ignore", timeout: 300_000, env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
    path = which();
  }
  if (!path) throw new Error("promtool is missing: apt-get update && apt-get install -y --no-install-recommends prometheus");
  return path;
}

/** A chart release a test file installs for real: its names, and the namespace it goes to once created. */
export interface TestRelease {
  readonly name: string;
  /** `<release>-leviath-operator`, the prefix of the chart's objects. */
  readonly fullname: string;
  /** The sandbox namespace the test passes as `sandboxNamespace.name`. */
  readonly sandbox: string;
  /** The release namespace (created in beforeAll). */
  namespace(): string;
}

/**
 * Registers the hooks of a file that installs the chart: the chart's CRDs and a restricted release namespace
 * before, no cluster LeviathPolicy before or after (the chart installs its own), and the release and both
 * namespaces removed after.
 */
export function useTestRelease(prefix: string): TestRelease {
  const name = uniqueName(prefix);
  const sandbox = uniqueName("sandbox");
  let namespace = "";
  const dropPolicy = () => testCluster().custom.deleteClusterCustomObject({ ...OURS.policies, name: "cluster" }).catch(() => undefined);
  beforeAll(async () => {
    await installCrds("charts/leviath-operator/crds/");
    await dropPolicy();
    namespace = await createRestrictedNamespace(prefix);
  }, 300_000);
  afterAll(async () => {
    await helm(["uninstall", name, "--namespace", namespace], { allowFailure: true });
    for (const ns of [namespace, sandbox]) if (ns) await deleteNamespace(ns);
    await dropPolicy();
  });
  return { name, fullname: `${name}-leviath-operator`, sandbox, namespace: () => namespace };
}
