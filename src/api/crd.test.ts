import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { buildCrd, buildStructuralSchema, type OpenApiSchema } from "./crd.ts";
import { CRD_DEFINITIONS, RUN_CRD, AGENT_CRD } from "./crd-definitions.ts";
import { buildCrdFiles } from "./crd-files.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** Every node of a schema tree with its path. */
function* nodes(node: OpenApiSchema, path = "$"): Generator<[string, OpenApiSchema]> {
  yield [path, node];
  for (const [k, v] of Object.entries((node["properties"] ?? {}) as Record<string, OpenApiSchema>)) yield* nodes(v, `${path}.${k}`);
  if (node["items"]) yield* nodes(node["items"] as OpenApiSchema, `${path}[]`);
  if (typeof node["additionalProperties"] === "object") yield* nodes(node["additionalProperties"] as OpenApiSchema, `${path}{}`);
}

function schemaOf(crd: OpenApiSchema): OpenApiSchema {
  return (crd as { spec: { versions: { schema: { openAPIV3Schema: OpenApiSchema } }[] } }).spec.versions[0]!.schema.openAPIV3Schema;
}

describe("buildStructuralSchema", () => {
  it.each([
    ["a strict object drops additionalProperties: false", z.strictObject({ a: z.string() }), { type: "object", properties: { a: { type: "string" } }, required: ["a"] }],
    ["an open record preserves unknown fields", z.record(z.string(), z.unknown()), { type: "object", "x-kubernetes-preserve-unknown-fields": true }],
    ["a typed record keeps its value schema", z.record(z.string(), z.number().int()), { type: "object", additionalProperties: { type: "integer" } }],
    ["a literal becomes a one-value enum", z.literal("x"), { type: "string", enum: ["x"] }],
    ["unknown keeps anything", z.unknown(), { "x-kubernetes-preserve-unknown-fields": true }],
    // The API server refuses `type: [string, number, boolean]` (one type a node); the zod schema refuses an object.
    ["a union of scalars keeps any value", z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])), { type: "object", additionalProperties: { "x-kubernetes-preserve-unknown-fields": true } }],
    ["defaults are not written into the CRD", z.strictObject({ n: z.number().int().min(1).default(3) }), { type: "object", properties: { n: { type: "integer", minimum: 1 } } }],
  ])("%s", (_name, schema, expected) => {
    expect(buildStructuralSchema(z.toJSONSchema(schema, { io: "input" }))).toEqual(expected);
  });
});

describe("the generated CRDs", () => {
  it.each(CRD_DEFINITIONS.map((d) => [d.kind, d] as const))("%s describes every field, at every level (kubectl explain)", (_kind, def) => {
    const missing = [...nodes(schemaOf(buildCrd(def)))].filter(([path, node]) => !path.endsWith("[]") && !path.endsWith("{}") && path !== "$.metadata" && !node["description"]).map(([path]) => path);
    expect(missing).toEqual([]);
  });

  it.each(CRD_DEFINITIONS.map((d) => [d.kind, d] as const))("%s is structural: every node typed, no properties beside additionalProperties", (_kind, def) => {
    for (const [path, node] of nodes(schemaOf(buildCrd(def)))) {
      const typed = typeof node["type"] === "string" || (node["type"] === undefined && node["x-kubernetes-preserve-unknown-fields"] === true);
      expect(typed, `${path} has no type`).toBe(true);
      expect(node["properties"] !== undefined && node["additionalProperties"] !== undefined, `${path} mixes properties and additionalProperties`).toBe(false);
      expect(node["additionalProperties"], `${path}`).not.toBe(false);
      for (const banned of ["$schema", "propertyNames", "default", "const", "anyOf", "oneOf", "$ref"]) {
        expect(node[banned], `${path}.${banned}`).toBeUndefined();
      }
    }
  });

  it("serves stages and conditions as list-maps keyed by name and type", () => {
    const agent = schemaOf(buildCrd(AGENT_CRD)) as { properties: Record<string, OpenApiSchema> };
    const stages = (agent.properties["spec"]!["properties"] as Record<string, OpenApiSchema>)["stages"]!;
    expect(stages["x-kubernetes-list-type"]).toBe("map");
    expect(stages["x-kubernetes-list-map-keys"]).toEqual(["name"]);
    const run = schemaOf(buildCrd(RUN_CRD)) as { properties: Record<string, OpenApiSchema> };
    const conditions = (run.properties["status"]!["properties"] as Record<string, OpenApiSchema>)["conditions"]!;
    expect(conditions["x-kubernetes-list-map-keys"]).toEqual(["type"]);
    expect((conditions["items"] as OpenApiSchema)["required"]).toContain("type");
  });

  it("keeps the runtime's verbatim parts open, and unknown keys of the typed parts stored (not pruned) for admission to refuse", () => {
    const agent = schemaOf(buildCrd(AGENT_CRD)) as { properties: Record<string, OpenApiSchema> };
    const spec = agent.properties["spec"]!["properties"] as Record<string, OpenApiSchema>;
    expect(spec["blueprint"]!["x-kubernetes-preserve-unknown-fields"]).toBe(true);
    expect(spec["blueprint"]!["properties"]).toBeUndefined();
    expect((spec["agent"]!["properties"] as Record<string, OpenApiSchema>)["runtime"]!["x-kubernetes-preserve-unknown-fields"]).toBe(true);
    expect(spec["sandbox"]!["x-kubernetes-preserve-unknown-fields"]).toBe(true);
    expect(Object.keys(spec["sandbox"]!["properties"] as object)).toContain("network");
    const status = agent.properties["status"]!;
    expect(status["x-kubernetes-preserve-unknown-fields"]).toBeUndefined();
  });

  it("has a status subresource and the printer columns", () => {
    const crd = buildCrd(RUN_CRD) as { spec: { versions: { subresources: unknown; additionalPrinterColumns: { name: string }[] }[] } };
    expect(crd.spec.versions[0]!.subresources).toEqual({ status: {} });
    expect(crd.spec.versions[0]!.additionalPrinterColumns.map((c) => c.name)).toEqual(["Agent", "Phase", "Reason", "Stage", "Taint", "Reads", "Age"]);
  });
});

describe("committed files", () => {
  it.each(buildCrdFiles().map((f) => [f.path, f] as const))("%s matches the schemas (run 'node scripts/gen-crds.ts' if not)", (path, file) => {
    let committed = "";
    try {
      committed = readFileSync(`${root}${path}`, "utf8");
    } catch {
      // a missing file differs from the generated text
    }
    expect(committed).toBe(file.content);
  });
});
