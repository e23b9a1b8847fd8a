import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { createLazySchemaCompilers } from "./lazy-schema-compilers.ts";

// fastify's schema compilers loaded on first use: nothing for routes without a schema, and a route with one is
// validated and serialized exactly as by fastify's defaults (an instance made with no schemaController beside it).
const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
});

function lazyApp(loads: string[]): FastifyInstance {
  const app = Fastify({ schemaController: { compilersFactory: createLazySchemaCompilers((name) => loads.push(name)) } });
  apps.push(app);
  return app;
}

function defaultApp(): FastifyInstance {
  const app = Fastify();
  apps.push(app);
  return app;
}

const BODY = { type: "object", required: ["n"], properties: { n: { type: "integer", minimum: 1 } }, additionalProperties: false } as const;
const REPLY = { 200: { type: "object", properties: { n: { type: "integer" } } } } as const;

function withSchemaRoutes(app: FastifyInstance): FastifyInstance {
  app.post("/checked", { schema: { body: BODY, response: REPLY } }, async (req) => ({ n: (req.body as { n: number }).n, extra: "dropped by the serializer" }));
  return app;
}

describe("createLazySchemaCompilers", () => {
  it("loads neither compiler for routes that declare no schema", async () => {
    const loads: string[] = [];
    const app = lazyApp(loads);
    app.post("/plain", async (req) => ({ got: req.body }));
    app.get("/healthz", async () => ({ status: "ok" }));
    await app.ready();
    const r = await app.inject({ method: "POST", url: "/plain", payload: { n: "x", more: 1 } });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ got: { n: "x", more: 1 } });
    expect(loads).toEqual([]);
  });

  it("loads fastify's own compilers once a route declares a schema, each once", async () => {
    const loads: string[] = [];
    const app = withSchemaRoutes(lazyApp(loads));
    app.post("/again", { schema: { body: BODY, response: REPLY } }, async () => ({ n: 1 }));
    await app.ready();
    expect(loads.sort()).toEqual(["@fastify/ajv-compiler", "@fastify/fast-json-stringify-compiler"]);
  });

  it("validates and serializes as fastify's defaults do", async () => {
    const lazy = withSchemaRoutes(lazyApp([]));
    const plain = withSchemaRoutes(defaultApp());
    for (const payload of [{ n: 3 }, { n: 0 }, { n: "3" }, { m: 1 }, { n: 2, other: true }]) {
      const [a, b] = await Promise.all([lazy, plain].map((app) => app.inject({ method: "POST", url: "/checked", payload })));
      expect({ payload, status: a!.statusCode, body: a!.json() }).toEqual({ payload, status: b!.statusCode, body: b!.json() });
    }
    // The cases are not all alike: one passes (the extra field dropped by the response schema), one is refused.
    expect((await lazy.inject({ method: "POST", url: "/checked", payload: { n: 3 } })).json()).toEqual({ n: 3 });
    expect((await lazy.inject({ method: "POST", url: "/checked", payload: { n: 0 } })).statusCode).toBe(400);
  });
});
