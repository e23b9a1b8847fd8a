import { stringify } from "yaml";
import { buildStrictKeysPolicy } from "./admission-policy.ts";
import { buildCrd } from "./crd.ts";
import { buildCrdReference } from "./crd-docs.ts";
import { CRD_DEFINITIONS } from "./crd-definitions.ts";

/** A generated file: path relative to the repository root, and its full text. */
export interface GeneratedFile {
  path: string;
  content: string;
}

const HEADER = "# Generated from the zod schemas in src/api/ by scripts/gen-crds.ts; do not edit by hand.\n";

/** Where the strict-keys admission policy is written: a chart file its template includes, and tests apply as it is. */
export const STRICT_KEYS_POLICY_FILE = "charts/leviath-operator/files/strict-keys-policy.yaml";

/** Every file `scripts/gen-crds.ts` writes: one YAML per CRD under `crds/`, the strict-keys admission policy, and `docs/crds.md`. */
export function buildCrdFiles(): GeneratedFile[] {
  const files = CRD_DEFINITIONS.map((def) => ({
    path: `crds/${def.group}_${def.plural}.yaml`,
    content: HEADER + stringify(buildCrd(def), { lineWidth: 0 }),
  }));
  files.push({ path: STRICT_KEYS_POLICY_FILE, content: HEADER + buildStrictKeysPolicy(CRD_DEFINITIONS).map((o) => stringify(o, { lineWidth: 0 })).join("---\n") });
  files.push({ path: "docs/crds.md", content: buildCrdReference(CRD_DEFINITIONS) });
  return files;
}
