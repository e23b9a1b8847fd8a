import { createRequire } from "node:module";
import type * as Yaml from "yaml";
import { z } from "zod";
import { AgentSpecSchema, type AgentSpec } from "../api/agent.ts";
import { API_VERSION, DEFAULT_NAMESPACE, KIND } from "../api/constants.ts";
import { LeviathPolicySpecSchema, type LeviathPolicySpec } from "../api/leviath-policy.ts";
import { validateEntrySyntax } from "../policy/read-paths/index.ts";
import type { LoadIssue, Loaded } from "./load-error.ts";

/** An object of ours read from YAML or JSON, with the identity Kubernetes gives it. */
export interface ParsedResource<T> {
  kind: string;
  name: string;
  namespace: string;
  spec: T;
}

const MetaSchema = z.looseObject({
  name: z.string().min(1),
  namespace: z.string().min(1).optional(),
});

const HeaderSchema = z.looseObject({
  apiVersion: z.literal(API_VERSION, { message: `apiVersion must be ${API_VERSION}` }),
  kind: z.string(),
  metadata: MetaSchema,
  spec: z.unknown(),
});

function zodIssues(file: string, prefix: string, error: z.ZodError): LoadIssue[] {
  return error.issues.map((i) => {
    const path = [prefix, ...i.path.map(String)].filter(Boolean).join(".");
    const message = i.code === "unrecognized_keys" ? `unknown key${i.keys.length > 1 ? "s" : ""} ${i.keys.map((k) => `'${k}'`).join(", ")}` : i.message;
    return { file, where: path, message };
  });
}

/** The `yaml` package, once a YAML file is read. */
let yaml: typeof Yaml | undefined;

/**
 * `yaml` is loaded on the first YAML file, not at import: the standalone sidecar reads upstream TOML files and
 * polls them, and would otherwise carry the package (about 1 MiB resident beside the sidecar's other modules,
 * 12 MiB on its own) for nothing. It is CommonJS, so `require` loads it synchronously, as a reload needs.
 */
function loadYaml(): typeof Yaml {
  return (yaml ??= createRequire(import.meta.url)("yaml") as typeof Yaml);
}

/** The objects of a stream: each document's, and the `items` of a `kind: List` (or `<Kind>List`) in their place. */
function objectsOf(documents: unknown[]): unknown[] {
  return documents.flatMap((o) => {
    const list = o as { kind?: unknown; items?: unknown } | null;
    const isList = typeof list?.kind === "string" && list.kind.endsWith("List") && Array.isArray(list.items);
    return isList ? (list.items as unknown[]) : [o];
  });
}

/** "no Agent in the file (it holds LeviathPolicy)", or how many there are: one is wanted. */
function describeMismatch(kind: string, count: number, kinds: string[]): string {
  if (count > 1) return `${count} ${kind} objects in the file; give one`;
  const others = [...new Set(kinds)];
  return others.length === 0 ? `no ${kind} in the file` : `no ${kind} in the file (it holds ${others.join(", ")})`;
}

/**
 * Parse YAML text holding one resource of `kind`, checking the spec strictly: alone, among other documents (a
 * namespace and its Agent), or an item of a List, as `kubectl get -o yaml` prints several.
 */
function parseResource<T>(file: string, text: string, expected: { kind: string; schema: z.ZodType<T>; defaultNamespace: string }): Loaded<ParsedResource<T>> {
  const { kind, schema, defaultNamespace } = expected;
  const docs = loadYaml().parseAllDocuments(text, { prettyErrors: true }).filter((d) => d.contents !== null);
  if (docs.length === 0) return { ok: false, issues: [{ file, message: "the file holds no YAML document" }] };
  const broken = docs.find((d) => d.errors.length > 0);
  if (broken !== undefined) {
    const err = broken.errors[0];
    const pos = err?.linePos?.[0];
    return { ok: false, issues: [{ file, message: `invalid YAML: ${err?.message.split("\n")[0] ?? "parse error"}`, ...(pos ? { line: pos.line, column: pos.col } : {}) }] };
  }
  const objects = objectsOf(docs.map((d) => d.toJS() as unknown));
  const kinds = objects.map((o) => (o as { kind?: unknown } | null)?.kind).filter((k): k is string => typeof k === "string");
  const candidates = objects.filter((o) => (o as { kind?: unknown } | null)?.kind === kind);
  if (candidates.length !== 1) return { ok: false, issues: [{ file, message: describeMismatch(kind, candidates.length, kinds) }] };
  const head = HeaderSchema.safeParse(candidates[0]);
  if (!head.success) return { ok: false, issues: zodIssues(file, "", head.error) };
  const spec = schema.safeParse(head.data.spec ?? {});
  if (!spec.success) return { ok: false, issues: zodIssues(file, "spec", spec.error) };
  return {
    ok: true,
    value: { kind, name: head.data.metadata.name, namespace: head.data.metadata.namespace ?? defaultNamespace, spec: spec.data },
    warnings: [],
  };
}

/** Read an `Agent` from YAML; `spec.agent.name`, when given, must equal `metadata.name` (grants key on the latter). */
export function parseAgentYaml(file: string, text: string, defaultNamespace = DEFAULT_NAMESPACE): Loaded<ParsedResource<AgentSpec>> {
  const res = parseResource(file, text, { kind: KIND.agent, schema: AgentSpecSchema, defaultNamespace });
  if (res.ok && res.value.spec.agent.name !== undefined && res.value.spec.agent.name !== res.value.name) {
    return {
      ok: false,
      issues: [{ file, where: "spec.agent.name", message: `'${res.value.spec.agent.name}' differs from metadata.name '${res.value.name}'; an Agent is identified by namespace/name, so the two must match` }],
    };
  }
  if (res.ok) {
    const allow = res.value.spec.readPaths?.allow ?? [];
    for (const [i, entry] of allow.entries()) {
      const checked = validateEntrySyntax(entry);
      if (!checked.ok) return { ok: false, issues: [{ file, where: `spec.readPaths.allow[${i}]`, message: checked.error }] };
    }
  }
  return res;
}

/** Read a `LeviathPolicy` from YAML. */
export function parsePolicyYaml(file: string, text: string): Loaded<ParsedResource<LeviathPolicySpec>> {
  return parseResource(file, text, { kind: KIND.policy, schema: LeviathPolicySpecSchema, defaultNamespace: "" });
}
