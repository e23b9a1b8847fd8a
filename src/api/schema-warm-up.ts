// Zod compiles each object schema's parser the first time it parses an object (a generated function), and V8 then
// compiles that function on its first run: for the run policy's schema that is several milliseconds of CPU on the
// first parse, which a warm pool pod's sidecar would otherwise pay after its binding (docs/benchmarks.md, "Warm, the
// hand-over measured step by step"). `warmUpSchema` pays it before: it parses, for every object schema in the tree,
// a skeleton of that object (every field present, nested objects, arrays and records two levels deep, scalars
// absent), so each parser is generated and run once. The skeleton is made of empty objects and arrays: no value of
// any Run, and the results are thrown away.
import type { z } from "zod";

/** The parts of a zod v4 schema's definition the walk follows. */
interface SchemaDef {
  readonly type: string;
  readonly shape?: Readonly<Record<string, Schema>>;
  readonly innerType?: Schema;
  readonly element?: Schema;
  readonly valueType?: Schema;
  readonly options?: readonly Schema[];
  readonly in?: Schema;
  readonly out?: Schema;
  readonly items?: readonly Schema[];
  readonly left?: Schema;
  readonly right?: Schema;
  readonly getter?: () => Schema;
}
type Schema = { readonly _zod: { readonly def: SchemaDef } };

/** Wrappers whose inner schema parses the value as it is. */
const WRAPPERS = new Set(["optional", "nullable", "default", "prefault", "readonly", "catch", "nonoptional", "success"]);

/** The schemas directly inside `schema` (for a lazy one, what it resolves to). */
export function listInnerSchemas(schema: Schema): Schema[] {
  const def = schema._zod.def;
  const inner = [...Object.values(def.shape ?? {}), def.innerType, def.element, def.valueType, ...(def.options ?? []), def.in, def.out, ...(def.items ?? []), def.left, def.right];
  if (def.type === "lazy" && def.getter !== undefined) inner.push(def.getter());
  return inner.filter((s): s is Schema => s !== undefined && typeof s === "object" && "_zod" in s);
}

/** The schema that parses the value as it comes, through wrappers, pipes and (its first option) unions. */
function unwrap(schema: Schema): Schema {
  const def = schema._zod.def;
  const inner = WRAPPERS.has(def.type) ? def.innerType : def.type === "pipe" ? def.in : def.type === "union" ? def.options?.[0] : undefined;
  return inner === undefined ? schema : unwrap(inner);
}

/** An input shaped like `schema` to `depth` levels: objects with every field, arrays and records of one entry, scalars absent. */
export function buildSchemaSkeleton(schema: Schema, depth = 2): unknown {
  const def = unwrap(schema)._zod.def;
  const below = (inner: Schema | undefined) => (depth <= 0 || inner === undefined ? undefined : buildSchemaSkeleton(inner, depth - 1));
  if (def.type === "object") return depth <= 0 ? {} : Object.fromEntries(Object.entries(def.shape ?? {}).map(([k, v]) => [k, below(v)]));
  if (def.type === "array") return depth <= 0 ? [] : [below(def.element)];
  if (def.type === "record") return depth <= 0 ? {} : { k: below(def.valueType) };
  return undefined;
}

/**
 * Parses a skeleton of every object schema in `schema`'s tree once (each once, however often it recurs), so their
 * parsers are generated and compiled; returns how many were parsed. Never throws: a refinement that fails on a
 * skeleton is only a warm-up that did less.
 */
export function warmUpSchema(schema: z.ZodType): number {
  const seen = new Set<Schema>();
  const pending: Schema[] = [schema as unknown as Schema];
  let parsed = 0;
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (seen.has(next)) continue;
    seen.add(next);
    pending.push(...listInnerSchemas(next));
    if (next._zod.def.type !== "object") continue;
    try {
      (next as unknown as z.ZodType).safeParse(buildSchemaSkeleton(next));
      parsed++;
    } catch {
      // A refinement that throws on a skeleton: nothing of a Run is lost, the parser is compiled at its first use.
    }
  }
  return parsed;
}
