import { z } from "zod";

/** An OpenAPI v3 schema node as a CRD carries it. */
export type OpenApiSchema = { [key: string]: unknown };

/** A column `kubectl get` prints. */
export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  jsonPath: string;
  description?: string;
  priority?: number;
}

/** A CEL rule the API server checks at admission (`x-kubernetes-validations`). */
export interface CelValidation {
  rule: string;
  message: string;
}

/** Everything needed to build one CustomResourceDefinition from zod schemas. */
export interface CrdDefinition {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames?: string[];
  categories?: string[];
  scope: "Namespaced" | "Cluster";
  description: string;
  spec: z.ZodType;
  status: z.ZodType;
  specRequired: boolean;
  /** Arrays to serve as list-maps: dotted path from the object root (`spec.stages`) to the map keys. */
  listMaps: Record<string, string[]>;
  printerColumns: PrinterColumn[];
  /** Rules on the whole object (they may read `self.metadata.name`). */
  validations?: CelValidation[];
}

// JSON Schema keywords a CRD's OpenAPI subset does not accept; zod emits them, the generator drops them.
const DROPPED = new Set(["$schema", "propertyNames", "default", "$id", "id", "examples"]);
// Formats the API server knows; zod's own (`starts_with`, ...) are already expressed by `pattern`.
const KEPT_FORMATS = new Set(["date-time", "date", "int32", "int64", "uri", "uuid"]);

function isObject(v: unknown): v is OpenApiSchema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Turn zod's JSON Schema (draft 2020-12) into a structural OpenAPI v3 schema: `additionalProperties: false` is
 * dropped (the CRD's subset cannot say it; {@link keepUnknownKeys} and the admission policy take its place); an open record
 * (`z.record(string, unknown)`) or `z.unknown()` preserves unknown fields; `const` becomes a one-value `enum`;
 * zod's safe-integer bounds and unknown formats go; a union of scalar types preserves unknown fields too.
 */
export function buildStructuralSchema(node: unknown): OpenApiSchema {
  if (!isObject(node)) return { "x-kubernetes-preserve-unknown-fields": true };
  const out: OpenApiSchema = {};
  for (const [key, value] of Object.entries(node)) convertKeyword(out, key, value, "properties" in node);
  if (out["enum"] !== undefined && out["type"] === undefined) out["type"] = typeof (out["enum"] as unknown[])[0];
  // A union of scalars (`type: [string, number, boolean]`): a structural schema has one type a node, so the node
  // keeps any value and the zod schema, which the controller and the sidecar apply, refuses the wrong ones.
  if (Array.isArray(out["type"])) delete out["type"];
  if (out["type"] === undefined && out["x-kubernetes-preserve-unknown-fields"] === undefined) {
    out["x-kubernetes-preserve-unknown-fields"] = true;
  }
  return out;
}

/** Whether a keyword goes: one the API server refuses, an unknown format, or zod's safe-integer bound. */
function isDroppedKeyword(key: string, value: unknown): boolean {
  if (DROPPED.has(key)) return true;
  if (key === "format") return !KEPT_FORMATS.has(String(value));
  return (key === "minimum" || key === "maximum") && Math.abs(Number(value)) === Number.MAX_SAFE_INTEGER;
}

function convertKeyword(out: OpenApiSchema, key: string, value: unknown, hasProperties: boolean): void {
  if (isDroppedKeyword(key, value)) return;
  if (key === "const") out["enum"] = [value];
  else if (key === "properties" && isObject(value)) {
    out["properties"] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, buildStructuralSchema(v)]));
  } else if (key === "items") out["items"] = buildStructuralSchema(value);
  else if (key === "additionalProperties") convertAdditionalProperties(out, value, hasProperties);
  else out[key] = value;
}

function convertAdditionalProperties(out: OpenApiSchema, value: unknown, hasProperties: boolean): void {
  if (value === false || hasProperties) return;
  // An open map (`z.record(string, unknown)`): an object that lets any keys and values through.
  if (value === true || (isObject(value) && Object.keys(value).length === 0)) out["x-kubernetes-preserve-unknown-fields"] = true;
  else out["additionalProperties"] = buildStructuralSchema(value);
}

function schemaOf(type: z.ZodType): OpenApiSchema {
  return buildStructuralSchema(z.toJSONSchema(type, { io: "input", unrepresentable: "any", reused: "inline" }));
}

/**
 * Marks every object node that lists its `properties` (the root, spec and everything below it) with
 * `x-kubernetes-preserve-unknown-fields`, so the API server stores an unknown key instead of pruning it. Pruning
 * happens before admission and before the controller sees the object: a misspelled `netwrok` would vanish and
 * the sandbox would read looser than the file. Kept, the key is refused by the strict-keys admission policy
 * (admission-policy.ts) and, where that policy is not installed, makes the reconciler's strict zod parse fail.
 */
export function keepUnknownKeys(node: OpenApiSchema): OpenApiSchema {
  const props = node["properties"];
  if (isObject(props)) {
    node["x-kubernetes-preserve-unknown-fields"] = true;
    for (const child of Object.values(props)) if (isObject(child)) keepUnknownKeys(child);
  }
  if (isObject(node["items"])) keepUnknownKeys(node["items"]);
  if (isObject(node["additionalProperties"])) keepUnknownKeys(node["additionalProperties"]);
  return node;
}

function markListMap(root: OpenApiSchema, path: string, keys: string[]): void {
  let node: OpenApiSchema | undefined = root;
  for (const segment of path.split(".")) {
    const props: unknown = node?.["properties"];
    node = isObject(props) && isObject(props[segment]) ? props[segment] : undefined;
  }
  const items = node?.["items"];
  if (!node || node["type"] !== "array" || !isObject(items)) throw new Error(`listMap path ${path} is not an array of objects`);
  const required = new Set([...((items["required"] as string[] | undefined) ?? []), ...keys]);
  items["required"] = [...required];
  node["x-kubernetes-list-type"] = "map";
  node["x-kubernetes-list-map-keys"] = keys;
}

/** Build one CustomResourceDefinition (plain object, ready to serialise) from its zod schemas. */
export function buildCrd(def: CrdDefinition): OpenApiSchema {
  const root: OpenApiSchema = {
    type: "object",
    description: def.description,
    properties: {
      apiVersion: { type: "string", description: `The versioned schema of this object: ${def.group}/${def.version}.` },
      kind: { type: "string", description: `The kind of this object: ${def.kind}.` },
      // The API server allows nothing on metadata but its type; kubectl explain shows ObjectMeta's own text.
      metadata: { type: "object" },
      spec: keepUnknownKeys(schemaOf(def.spec)),
      status: schemaOf(def.status),
    },
    // Unknown keys at the root (`specc:`) are kept too, so the admission policy can name them.
    "x-kubernetes-preserve-unknown-fields": true,
    ...(def.specRequired ? { required: ["spec"] } : {}),
    ...(def.validations?.length ? { "x-kubernetes-validations": def.validations } : {}),
  };
  for (const [path, keys] of Object.entries(def.listMaps)) markListMap(root, path, keys);
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${def.plural}.${def.group}` },
    spec: {
      group: def.group,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        ...(def.shortNames ? { shortNames: def.shortNames } : {}),
        ...(def.categories ? { categories: def.categories } : {}),
      },
      scope: def.scope,
      versions: [{
        name: def.version,
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [...def.printerColumns, { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" }],
        schema: { openAPIV3Schema: root },
      }],
    },
  };
}
