import { z } from "zod";
import { describe, expect, it } from "vitest";
import { RunPolicySchema } from "./run-policy.ts";
import { buildSchemaSkeleton, warmUpSchema } from "./schema-warm-up.ts";

describe("warming a schema's parsers up", () => {
  it("builds a skeleton with every field, one entry per array and record, and no scalar", () => {
    const schema = z.strictObject({ a: z.string(), b: z.object({ c: z.array(z.object({ d: z.number() })) }).optional(), e: z.record(z.string(), z.object({ f: z.boolean() })) });
    expect(buildSchemaSkeleton(schema as never, 4)).toEqual({ a: undefined, b: { c: [{ d: undefined }] }, e: { k: { f: undefined } } });
    expect(buildSchemaSkeleton(schema as never, 1)).toEqual({ a: undefined, b: {}, e: {} });
  });

  it("parses every object schema of the tree once, through wrappers, unions, records and a recursive lazy one, and never throws", () => {
    type Node = { child?: Node };
    const node: z.ZodType<Node> = z.lazy(() => z.object({ child: node.optional() }));
    const schema = z.object({
      one: z.object({ x: z.string() }).default({ x: "" }),
      either: z.union([z.object({ y: z.number() }), z.object({ z: z.number() })]),
      map: z.record(z.string(), z.object({ w: z.string() })),
      tree: node,
      picky: z.object({ v: z.string() }).superRefine(() => {
        throw new Error("a refinement that throws on a skeleton");
      }),
    });
    // The root, one, the two options, the record's value, the lazy node, picky: 7.
    expect(warmUpSchema(schema)).toBe(7);
  });

  it("covers the run policy's schema (what a pool pod's sidecar parses first after its binding)", () => {
    expect(warmUpSchema(RunPolicySchema)).toBeGreaterThan(10);
    // Warming up changes nothing about what parses: an empty object is still refused.
    expect(RunPolicySchema.safeParse({}).success).toBe(false);
  });
});
