// The admin's ceilings on what the untrusted parties choose (LeviathPolicy spec.ceilings): the runtime image an
// Agent names, the mode of a Run and its launch allows. Pure: a refusal names the field and the policy entry.
import { FINDING_CODE, type Finding } from "../api/findings.ts";
import type { PolicyCeilings } from "../api/leviath-policy.ts";
import { REFERENCE_RUNTIME_KIND, type RuntimeKind } from "../api/runtime-kinds.ts";
import type { RuntimeTemplate } from "../api/runtime-templates.ts";
import type { RunSpec } from "../api/run.ts";

/** A choice the policy refuses: the field that chose, the policy entry that refuses it, and a message saying both. */
export interface CeilingRefusal {
  field: string;
  entry: string;
  message: string;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/**
 * Whether one allowlist entry admits an image reference: a digest (`sha256:...`) admits a reference pinned to it
 * (`...@sha256:...`); otherwise the entry is the whole reference, where each `*` matches any run of characters.
 * Matched piece by piece, never through a regular expression built from the entry.
 */
export function isImageAllowedBy(entry: string, image: string): boolean {
  if (DIGEST.test(entry)) return image.endsWith(`@${entry}`);
  const pieces = entry.split("*");
  if (pieces.length === 1) return entry === image;
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  if (!image.startsWith(first) || image.length < first.length + last.length) return false;
  let at = first.length;
  for (const piece of pieces.slice(1, -1)) {
    const found = image.indexOf(piece, at);
    if (found < 0) return false;
    at = found + piece.length;
  }
  return image.length - last.length >= at && image.endsWith(last);
}

/** The refusal of an Agent's runtime image, if any: the controller's default image is always allowed. */
export function decideImageCeiling(ceilings: PolicyCeilings, image: string | undefined, defaultImage: string | undefined): CeilingRefusal | undefined {
  if (image === undefined || image === defaultImage) return undefined;
  if (ceilings.runtimeImages.some((entry) => isImageAllowedBy(entry, image))) return undefined;
  const allowed = [...(defaultImage ? [`${defaultImage} (the controller's default)`] : []), ...ceilings.runtimeImages];
  return {
    field: "spec.image",
    entry: "spec.ceilings.runtimeImages",
    message: `spec.image: runtime image '${image}' is not allowed by the LeviathPolicy (spec.ceilings.runtimeImages; allowed: ${allowed.length ? allowed.join(", ") : "none"})`,
  };
}

/** The refusal of an Agent's runtime kind, if any: the reference runtime is always allowed, any other kind only when listed. */
export function decideKindCeiling(ceilings: PolicyCeilings, kind: RuntimeKind | undefined): CeilingRefusal | undefined {
  if (kind === undefined || kind === REFERENCE_RUNTIME_KIND || ceilings.runtimeKinds.includes(kind)) return undefined;
  const allowed = [`${REFERENCE_RUNTIME_KIND} (always)`, ...ceilings.runtimeKinds.filter((k) => k !== REFERENCE_RUNTIME_KIND)];
  return {
    field: "spec.runtime.kind",
    entry: "spec.ceilings.runtimeKinds",
    message: `spec.runtime.kind: runtime kind '${kind}' is not allowed by the LeviathPolicy (spec.ceilings.runtimeKinds; allowed: ${allowed.join(", ")})`,
  };
}

/**
 * The refusal of an mcp-command Agent's template, if any: the kind needs one, and only a template the policy declares
 * (spec.runtimeTemplates) runs. Any other kind names none (the Agent's schema refuses it).
 */
export function decideTemplateCeiling(templates: readonly Pick<RuntimeTemplate, "name">[], runtime: { kind: RuntimeKind; template?: string | undefined } | undefined): CeilingRefusal | undefined {
  if (runtime?.kind !== "mcp-command") return undefined;
  if (runtime.template !== undefined && templates.some((t) => t.name === runtime.template)) return undefined;
  const declared = templates.map((t) => t.name).join(", ") || "none";
  const what = runtime.template === undefined ? "runtime kind 'mcp-command' names no template" : `runtime template '${runtime.template}' is not declared by the LeviathPolicy`;
  return { field: "spec.runtime.template", entry: "spec.runtimeTemplates", message: `spec.runtime.template: ${what} (spec.runtimeTemplates; declared: ${declared})` };
}

/** The agent fields the runtime ceilings look at. */
type RuntimeChoice = { image?: string | undefined; runtime?: { kind: RuntimeKind; template?: string | undefined } | undefined };

/** The refusal of an Agent's runtime: its kind, its template (mcp-command), then its image. */
export function decideRuntimeCeilings(policy: { ceilings: PolicyCeilings; runtimeTemplates?: readonly Pick<RuntimeTemplate, "name">[] }, agent: RuntimeChoice, defaultImage: string | undefined): CeilingRefusal | undefined {
  const { ceilings } = policy;
  return decideKindCeiling(ceilings, agent.runtime?.kind) ?? decideTemplateCeiling(policy.runtimeTemplates ?? [], agent.runtime) ?? decideImageCeiling(ceilings, agent.image, defaultImage);
}

/**
 * The runtime ceilings' refusal as an error finding (the Agent's status, and `leviath validate` given the policy): its
 * code says which choice the policy refuses.
 */
export function computeRuntimeCeilingFinding(...args: Parameters<typeof decideRuntimeCeilings>): Finding | undefined {
  const refused = decideRuntimeCeilings(...args);
  if (refused === undefined) return undefined;
  const code = { "spec.image": FINDING_CODE.runtimeImageNotAllowed, "spec.runtime.template": FINDING_CODE.runtimeTemplateNotDeclared }[refused.field] ?? FINDING_CODE.runtimeKindNotAllowed;
  return { severity: "error", code, message: refused.message, fix: `change ${refused.field} of the Agent, or the admin allows it in ${refused.entry} of the LeviathPolicy` };
}

/** The refusal of a Run's mode or launch allows, if any. */
export function decideRunCeilings(ceilings: PolicyCeilings, run: Pick<RunSpec, "mode" | "allowTools">): CeilingRefusal | undefined {
  if (!ceilings.runModes.includes(run.mode)) {
    return {
      field: "spec.mode",
      entry: "spec.ceilings.runModes",
      message: `spec.mode: '${run.mode}' is not allowed by the LeviathPolicy (spec.ceilings.runModes: ${ceilings.runModes.join(", ") || "none"})`,
    };
  }
  if (run.allowTools.length > 0 && !ceilings.allowTools) {
    return {
      field: "spec.allowTools",
      entry: "spec.ceilings.allowTools",
      message: `spec.allowTools: launch allows (${run.allowTools.join(", ")}) are not allowed by the LeviathPolicy (spec.ceilings.allowTools is false)`,
    };
  }
  return undefined;
}
