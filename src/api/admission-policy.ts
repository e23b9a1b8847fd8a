// The strict-keys admission policy: one ValidatingAdmissionPolicy, generated from the same zod schemas as the
// CRDs, that refuses an unknown key anywhere in an Agent, Run, LeviathPolicy or Approval and names its path.
//
// Why a ValidatingAdmissionPolicy and not the CRD schema or a webhook: the API server prunes unknown fields while
// it decodes a request, before any admission step or CEL rule runs, so neither `x-kubernetes-validations` nor a
// webhook ever sees `netwrok`. The CRDs therefore keep unknown keys (crd.ts `keepUnknownKeys`), and this policy,
// which runs inside the API server on the stored shape, refuses them for every client: kubectl with
// `--validate=false`, a raw request with no `fieldValidation`, Helm. Unlike a webhook it has no certificate to
// rotate and no operator availability to depend on: it holds while the controller is down.
import { buildCrd, type CrdDefinition, type OpenApiSchema } from "./crd.ts";

/** Name of the ValidatingAdmissionPolicy (and of its binding). */
export const STRICT_KEYS_POLICY_NAME = "leviath-strict-keys";

/** One rule of the policy: an expression that holds when the node has only known keys, and the message naming the one it has not. */
export interface StrictKeysValidation {
  expression: string;
  messageExpression: string;
  reason: "Invalid";
}

const isObject = (v: unknown): v is OpenApiSchema => typeof v === "object" && v !== null && !Array.isArray(v);
const quote = (s: string) => `'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
const list = (keys: readonly string[]) => `[${keys.map(quote).join(", ")}]`;
// Bracket access throughout: property names such as `namespace` are reserved words in CEL.
const field = (expr: string, key: string) => `${expr}[${quote(key)}]`;

/** A step from a node to a child: through a named field, or into the elements of an array or the values of a map. */
type Step = { kind: "field"; key: string } | { kind: "items" } | { kind: "values" };

/** The CEL reaching a node below `base` through field steps only, and the guard that each field is present. */
function reach(base: string, fields: readonly string[]): { expr: string; guard: string[] } {
  let expr = base;
  const guard: string[] = [];
  for (const key of fields) {
    guard.push(`${quote(key)} in ${expr}`);
    expr = field(expr, key);
  }
  return { expr, guard };
}

const displayOf = (fields: readonly string[]) => fields.map((k) => `.${k}`).join("");

/** The rule for one object node at `steps` below `object`: at most one array or map on the way (the schemas have no deeper nesting). */
function ruleFor(steps: readonly Step[], keys: readonly string[]): StrictKeysValidation {
  const known = list(keys);
  const at = steps.findIndex((s) => s.kind !== "field");
  const names = (part: readonly Step[]) => part.map((s) => (s as { key: string }).key);
  const unknownIn = (expr: string) => `${expr}.filter(k, !(k in ${known}))[0]`;
  const allKnown = (expr: string) => `${expr}.all(k, k in ${known})`;
  const valid = ` (valid: ${keys.join(", ")})`;
  if (at < 0) {
    const node = reach("object", names(steps));
    const display = displayOf(names(steps)).replace(/^\./, "") || "the object";
    return {
      expression: [...node.guard.map((g) => `!(${g})`), allKnown(node.expr)].join(" || "),
      messageExpression: `${quote(`${display}: unknown key '`)} + ${unknownIn(node.expr)} + ${quote(`'${valid}`)}`,
      reason: "Invalid",
    };
  }
  if (steps.slice(at + 1).some((s) => s.kind !== "field")) throw new Error(`strict keys: nested collections below ${displayOf(names(steps.slice(0, at)))} are not supported`);
  const outer = reach("object", names(steps.slice(0, at)));
  const innerFields = names(steps.slice(at + 1));
  const elementOk = (element: string) => {
    const inner = reach(element, innerFields);
    return `(${[...inner.guard.map((g) => `!(${g})`), allKnown(inner.expr)].join(" || ")})`;
  };
  const isArray = steps[at]!.kind === "items";
  const elementOf = (v: string) => (isArray ? v : `${outer.expr}[${v}]`);
  const bad = `${outer.expr}.filter(e, !${elementOk(elementOf("e"))})[0]`;
  const where = isArray ? `'[' + string(${outer.expr}.indexOf(${bad})) + ']'` : `'.' + ${bad}`;
  const element = isArray ? bad : `${outer.expr}[${bad}]`;
  const inner = reach(`(${element})`, innerFields);
  return {
    expression: [...outer.guard.map((g) => `!(${g})`), `${outer.expr}.all(e, ${elementOk(elementOf("e"))})`].join(" || "),
    messageExpression: `${quote(displayOf(names(steps.slice(0, at))).replace(/^\./, ""))} + ${where} + ${quote(`${displayOf(innerFields)}: unknown key '`)} + ${unknownIn(inner.expr)} + ${quote(`'${valid}`)}`,
    reason: "Invalid",
  };
}

/** Every object node with declared properties below `node` (verbatim subtrees have none and are skipped). */
function collect(node: OpenApiSchema, steps: Step[], out: StrictKeysValidation[]): void {
  const props = node["properties"];
  if (isObject(props)) {
    out.push(ruleFor(steps, Object.keys(props)));
    for (const [key, child] of Object.entries(props)) if (isObject(child) && key !== "metadata" && key !== "status") collect(child, [...steps, { kind: "field", key }], out);
  }
  if (isObject(node["items"])) collect(node["items"], [...steps, { kind: "items" }], out);
  if (isObject(node["additionalProperties"])) collect(node["additionalProperties"], [...steps, { kind: "values" }], out);
}

/** The strict-keys rules of one CRD: the root's keys, then every object of its spec. */
export function buildStrictKeysValidations(def: CrdDefinition): StrictKeysValidation[] {
  const crd = buildCrd(def) as { spec: { versions: { schema: { openAPIV3Schema: OpenApiSchema } }[] } };
  const out: StrictKeysValidation[] = [];
  collect(crd.spec.versions[0]!.schema.openAPIV3Schema, [], out);
  return out;
}

const KIND_GUARD = (def: CrdDefinition) => `request.resource.resource == ${quote(def.plural)}`;

/**
 * The ValidatingAdmissionPolicy and its binding (deny), for every kind in `defs`. Each rule is guarded by the
 * resource it belongs to. An update that leaves the spec as it was (a finalizer, a label) is not checked, so an
 * object stored before the policy existed can still be cleaned up.
 */
export function buildStrictKeysPolicy(defs: readonly CrdDefinition[]): OpenApiSchema[] {
  const validations = defs.flatMap((def) => buildStrictKeysValidations(def).map((v) => ({
    ...v,
    expression: `!(${KIND_GUARD(def)}) || ${v.expression}`,
  })));
  const policy = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicy",
    metadata: { name: STRICT_KEYS_POLICY_NAME },
    spec: {
      failurePolicy: "Fail",
      matchConstraints: {
        resourceRules: [{
          apiGroups: [...new Set(defs.map((d) => d.group))],
          apiVersions: [...new Set(defs.map((d) => d.version))],
          operations: ["CREATE", "UPDATE"],
          resources: defs.map((d) => d.plural),
        }],
      },
      matchConditions: [{
        name: "new-or-spec-changed",
        expression: "request.operation == 'CREATE' || !has(oldObject.spec) || !has(object.spec) || object.spec != oldObject.spec",
      }],
      validations,
    },
  };
  const binding = {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingAdmissionPolicyBinding",
    metadata: { name: STRICT_KEYS_POLICY_NAME },
    spec: { policyName: STRICT_KEYS_POLICY_NAME, validationActions: ["Deny"] },
  };
  return [policy, binding];
}
