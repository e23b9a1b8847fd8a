// fastify's schema compilers, loaded on first use instead of when an instance is made. Made with no
// `schemaController`, fastify requires its defaults at once (@fastify/ajv-compiler with ajv and ajv-formats, and
// @fastify/fast-json-stringify-compiler with fast-json-stringify: about 60 files, a sixth of a cold sidecar's CPU to
// its listen, docs/benchmarks.md "The cold start"); the sidecar's routes declare no schema, so they are never needed.
// A route that declares one gets those same defaults, built as fastify builds them, on its registration.
import { createRequire } from "node:module";
import type { FastifyServerOptions } from "fastify";

/** fastify's `compilersFactory`: each builder is given the instance's shared schemas and its ajv / serializer options. */
type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]>;
type SchemaCompilersFactory = Required<CompilersFactory>;
type Builder = (externalSchemas: unknown, options: unknown) => unknown;

/** Loads a module as fastify itself resolves it (its dependencies are its own, not ours). */
const requireFromFastify = createRequire(createRequire(import.meta.url).resolve("fastify"));

/** fastify's default compilers, each required the first time a route needs it; `loaded` hears each module's name then. */
export function createLazySchemaCompilers(loaded?: (name: string) => void): SchemaCompilersFactory {
  let validator: Builder | undefined;
  let serializer: Builder | undefined;
  const load = (name: string): Builder => {
    loaded?.(name);
    return (requireFromFastify(name) as () => Builder)();
  };
  const buildValidator = (externalSchemas: unknown, options: unknown): unknown => (validator ??= load("@fastify/ajv-compiler"))(externalSchemas, options);
  const buildSerializer = (externalSchemas: unknown, options: unknown): unknown => (serializer ??= load("@fastify/fast-json-stringify-compiler"))(externalSchemas, options);
  return { buildValidator, buildSerializer } as SchemaCompilersFactory;
}
