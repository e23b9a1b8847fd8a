import { z } from "zod";
import { LeviathPolicySpecSchema } from "./policy.ts";

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
