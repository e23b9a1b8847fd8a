import { z } from "zod";
import { buildCrd, type OpenApiSchema } from "./crd.ts";
import { POLICY_CRD } from "./crd-definitions.ts";
import { LeviathPolicySpecSchema } from "./leviath-policy.ts";

/** The chart's values schema, whose `policy.spec` is generated from the LeviathPolicy spec's zod schema. */
export const VALUES_SCHEMA_FILE = "charts/leviath-operator/values.schema.json";

/**
 * The JSON Schema (draft-07, as the chart's values.schema.json) of `policy.spec`: every key of the LeviathPolicy
 * spec with `additionalProperties: false`, so `helm install` with a typo in `policy.spec` fails naming the key.
 */
export function buildPolicySpecValuesSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(LeviathPolicySpecSchema, { io: "input", target: "draft-7", unrepresentable: "any", reused: "inline" }) as Record<string, unknown>;
  delete schema["$schema"];
  return { ...schema, description: "The LeviathPolicy spec (docs/crds.md); an unknown key fails the install with its path." };
}

/** `values.schema.json` with its `policy.spec` replaced by {@link buildPolicySpecValuesSchema}; everything else as it was. */
export function buildValuesSchema(current: string): string {
  const values = JSON.parse(current) as { properties: { policy: { properties: Record<string, unknown> } } };
  values.properties.policy.properties["spec"] = buildPolicySpecValuesSchema();
  return `${JSON.stringify(values, null, 2)}\n`;
}

/** The key tree of the LeviathPolicy spec the chart checks `policy.document` against (templates/_policy-keys.tpl). */
export const POLICY_KEYS_FILE = "charts/leviath-operator/files/policy-spec-keys.json";

/** A node of the key tree: `p` the known keys of an object, `i` the shape of an array's items, `v` of a map's values. */
export interface KeyTree {
  p?: Record<string, KeyTree>;
  i?: KeyTree;
  v?: KeyTree;
}

function buildKeyTree(node: OpenApiSchema): KeyTree {
  const out: KeyTree = {};
  const props = node["properties"] as Record<string, OpenApiSchema> | undefined;
  if (props) out.p = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, buildKeyTree(v)]));
  const items = node["items"] as OpenApiSchema | undefined;
  if (items?.["properties"]) out.i = buildKeyTree(items);
  const values = node["additionalProperties"] as OpenApiSchema | undefined;
  if (typeof values === "object" && values["properties"]) out.v = buildKeyTree(values);
  return out;
}

/**
 * The key tree of the LeviathPolicy spec, as JSON: Helm's JSON Schema check cannot look inside the YAML string
 * `policy.document`, so the chart walks the parsed document against this tree and fails naming an unknown key.
 */
export function buildPolicyKeysFile(): string {
  const crd = buildCrd(POLICY_CRD) as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: OpenApiSchema } } } }[] } };
  return `${JSON.stringify(buildKeyTree(crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec))}\n`;
}
