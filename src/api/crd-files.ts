import { stringify } from "yaml";
import { buildCrd } from "./crd.ts";
import { buildCrdReference } from "./crd-docs.ts";
import { CRD_DEFINITIONS } from "./crd-definitions.ts";

/** A generated file: path relative to the repository root, and its full text. */
export interface GeneratedFile {
  path: string;
  content: string;
}

const HEADER = "# Generated from the zod schemas in src/api/ by scripts/gen-crds.ts; do not edit by hand.\n";

/** Every file `scripts/gen-crds.ts` writes: one YAML per CRD under `crds/`, and `docs/crds.md`. */
export function buildCrdFiles(): GeneratedFile[] {
  const files = CRD_DEFINITIONS.map((def) => ({
    path: `crds/${def.group}_${def.plural}.yaml`,
    content: HEADER + stringify(buildCrd(def), { lineWidth: 0 }),
  }));
  files.push({ path: "docs/crds.md", content: buildCrdReference(CRD_DEFINITIONS) });
  return files;
}
