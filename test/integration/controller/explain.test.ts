// `kubectl explain` against the real API server, at every level of every CRD: the descriptions written in the zod
// schemas reach the OpenAPI the server publishes, so no field says `<no description>`.
import { beforeAll, describe, expect, it } from "vitest";
import { buildCrd, type OpenApiSchema } from "../../../src/api/crd.ts";
import { CRD_DEFINITIONS } from "../../../src/api/crd-definitions.ts";
import { installCrds, kubectl } from "../harness/index.ts";

beforeAll(async () => {
  await installCrds("crds/");
});

/** Every object node kubectl can explain (arrays are transparent in its paths; map values are not reachable). */
function* objectPaths(node: OpenApiSchema, path: string): Generator<[string, string[]]> {
  const target = node["type"] === "array" ? (node["items"] as OpenApiSchema) : node;
  const props = target["properties"] as Record<string, OpenApiSchema> | undefined;
  if (!props) return;
  yield [path, Object.keys(props)];
  for (const [key, child] of Object.entries(props)) yield* objectPaths(child, `${path}.${key}`);
}

describe("kubectl explain", () => {
  it.each(CRD_DEFINITIONS.map((d) => [d.kind, d] as const))("describes every field of %s at every level", async (_kind, def) => {
    const crd = buildCrd(def) as { spec: { versions: { schema: { openAPIV3Schema: OpenApiSchema } }[] } };
    const paths = [...objectPaths(crd.spec.versions[0]!.schema.openAPIV3Schema, def.plural)];
    expect(paths.length).toBeGreaterThan(3);
    for (const [path, fields] of paths) {
      const out = (await kubectl(["explain", path])).stdout;
      expect(out, path).not.toContain("<no description>");
      expect(out, path).toMatch(/DESCRIPTION:\n\s+\S/);
      for (const field of fields) expect(out, `${path}.${field}`).toMatch(new RegExp(`^  ${field}\\s+<`, "m"));
    }
  }, 300_000);

  it("says what a field means, its type and its values", async () => {
    const kind = (await kubectl(["explain", "agents.spec.stages.sandbox.kind"])).stdout;
    expect(kind).toContain("FIELD: kind <string>");
    expect(kind).toContain("Where commands run, weakest first");
    expect(kind).toMatch(/ENUM:\n\s+none\n\s+namespace\n\s+container\n\s+gvisor\n\s+microvm/);
    const perAgent = (await kubectl(["explain", "leviathpolicies.spec.readPaths.perAgent"])).stdout;
    expect(perAgent).toContain("keyed by namespace/name");
    const ready = (await kubectl(["explain", "runs.status.conditions.type"])).stdout;
    expect(ready).toContain("Ready");
  });
});
