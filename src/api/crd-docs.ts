import type { CrdDefinition, OpenApiSchema } from "./crd.ts";
import { buildCrd } from "./crd.ts";

interface Row {
  path: string;
  type: string;
  required: boolean;
  description: string;
}

function typeOf(node: OpenApiSchema): string {
  const type = typeof node["type"] === "string" ? (node["type"] as string) : "any";
  if (Array.isArray(node["enum"])) return `${type}: ${(node["enum"] as unknown[]).map((v) => `\`${String(v)}\``).join(", ")}`;
  if (type === "array") {
    const items = (node["items"] ?? {}) as OpenApiSchema;
    const keys = node["x-kubernetes-list-map-keys"] as string[] | undefined;
    return `array of ${typeOf(items)}${keys ? ` (map keyed by ${keys.join(", ")})` : ""}`;
  }
  if (type === "object" && node["additionalProperties"]) return `map of ${typeOf(node["additionalProperties"] as OpenApiSchema)}`;
  if (node["x-kubernetes-preserve-unknown-fields"] && !node["properties"]) return type === "any" ? "any (verbatim)" : `${type} (verbatim)`;
  return type;
}

function constraints(node: OpenApiSchema): string {
  const parts: string[] = [];
  for (const key of ["minLength", "maxLength", "minimum", "maximum", "maxItems", "pattern"]) {
    if (node[key] !== undefined) parts.push(`${key} ${key === "pattern" ? `\`${String(node[key])}\`` : String(node[key])}`);
  }
  return parts.length ? ` (${parts.join(", ")})` : "";
}

function walk(node: OpenApiSchema, path: string, required: boolean, rows: Row[]): void {
  rows.push({ path, type: typeOf(node) + constraints(node), required, description: String(node["description"] ?? "") });
  const props = node["properties"] as Record<string, OpenApiSchema> | undefined;
  const req = new Set((node["required"] as string[] | undefined) ?? []);
  for (const [key, child] of Object.entries(props ?? {})) walk(child, `${path}.${key}`, req.has(key), rows);
  const items = node["items"] as OpenApiSchema | undefined;
  if (items?.["properties"]) {
    const itemReq = new Set((items["required"] as string[] | undefined) ?? []);
    for (const [key, child] of Object.entries(items["properties"] as Record<string, OpenApiSchema>)) {
      walk(child, `${path}[].${key}`, itemReq.has(key), rows);
    }
  }
  const values = node["additionalProperties"] as OpenApiSchema | undefined;
  if (values?.["properties"]) walk(values, `${path}.<key>`, false, rows);
}

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** The field reference of every CRD, as Markdown (docs/crds.md). */
export function buildCrdReference(defs: readonly CrdDefinition[]): string {
  const out: string[] = [
    "# Leviath CRD reference",
    "",
    "Generated from the zod schemas in `src/api/` by `scripts/gen-crds.ts`; do not edit by hand.",
    "An unknown field is refused at admission with its path named, whatever the client asked for (the",
    "`leviath-strict-keys` ValidatingAdmissionPolicy the chart installs); without that policy the object is",
    "stored and the controller marks it invalid, naming the key. Fields marked verbatim are handed to the",
    "agent runtime unchanged.",
    "",
    "Every field of ours is camelCase (upstream's `on_unavailable` is `onUnavailable`, `[read_paths]` is `readPaths`;",
    "`leviath import` converts). Upstream's snake_case stays only where it is upstream's own runtime vocabulary,",
    "passed or shown as upstream has it: the keys inside the verbatim maps (`spec.stages[].runtime`,",
    "`spec.agent.runtime`, `spec.blueprint`, a Run's `spec.runtime`), tool names (`read_file`, `submit_output`),",
    "the prompt kinds of `status.pendingApprovals[].kind` (`taint_gate`, `tool_approval`, upstream's wait reasons)",
    "and the decision sources keying `status.gateDecisions` (`auto_block`, as the metrics label them).",
    "",
    "Each object reports `Ready` (and `Stalled`/`Reconciling`) for kstatus and `kubectl wait`; see",
    "[controller.md](controller.md#ready-stalled-reconciling-kstatus-kubectl-wait-gitops-health).",
    "",
  ];
  for (const def of defs) {
    const crd = buildCrd(def) as { spec: { versions: { schema: { openAPIV3Schema: OpenApiSchema }; additionalPrinterColumns: { name: string; jsonPath: string }[] }[] } };
    const version = crd.spec.versions[0]!;
    const root = version.schema.openAPIV3Schema;
    const props = root["properties"] as Record<string, OpenApiSchema>;
    out.push(`## ${def.kind} (\`${def.group}/${def.version}\`, ${def.scope.toLowerCase()})`, "", def.description, "");
    out.push(`\`kubectl get ${def.plural}\` columns: ${version.additionalPrinterColumns.map((c) => `${c.name} (\`${c.jsonPath}\`)`).join(", ")}.`, "");
    for (const v of def.validations ?? []) out.push(`Admission rule: ${v.message}.`, "");
    for (const part of ["spec", "status"] as const) {
      const rows: Row[] = [];
      walk(props[part]!, part, part === "spec" && def.specRequired, rows);
      out.push(`### ${def.kind}.${part}`, "", "| Field | Type | Required | Description |", "|---|---|---|---|");
      for (const r of rows.slice(1)) out.push(`| \`${r.path}\` | ${cell(r.type)} | ${r.required ? "yes" : ""} | ${cell(r.description)} |`);
      out.push("");
    }
  }
  return out.join("\n");
}
