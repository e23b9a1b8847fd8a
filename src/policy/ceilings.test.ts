import { describe, expect, it } from "vitest";
import { LeviathPolicySpecSchema } from "../api/leviath-policy.ts";
import { AgentSpecSchema } from "../api/agent.ts";
import { decideImageCeiling, decideKindCeiling, decideRunCeilings, decideRuntimeCeilings, decideTemplateCeiling, isImageAllowedBy } from "./ceilings.ts";

const DIGEST = `sha256:${"a".repeat(64)}`;
const ceilings = (c: unknown = {}) => LeviathPolicySpecSchema.parse({ ceilings: c }).ceilings;

describe("isImageAllowedBy", () => {
  it.each([
    ["registry.internal/runtime:1", "registry.internal/runtime:1", true],
    ["registry.internal/runtime:1", "registry.internal/runtime:2", false],
    ["registry.internal/runtimes/*", "registry.internal/runtimes/a:1", true],
    ["registry.internal/runtimes/*", "registry.internal/other/a:1", false],
    ["registry.internal/*:stable", "registry.internal/x:stable", true],
    ["registry.internal/*:stable", "registry.internal/x:latest", false],
    ["*", "anything/at:all", true],
    ["a*b*c", "abc", true],
    ["a*b*c", "ac", false],
    ["ab*ba", "aba", false],
    [DIGEST, `registry.internal/runtime@${DIGEST}`, true],
    [DIGEST, `registry.internal/runtime:${DIGEST}`, false],
    [DIGEST, "registry.internal/runtime:1", false],
  ])("%s admits %s: %s", (entry, image, expected) => {
    expect(isImageAllowedBy(entry, image)).toBe(expected);
  });
});

describe("decideImageCeiling", () => {
  it("always allows the controller's default image and an Agent that names none", () => {
    expect(decideImageCeiling(ceilings(), "registry.internal/runtime:1", "registry.internal/runtime:1")).toBeUndefined();
    expect(decideImageCeiling(ceilings(), undefined, undefined)).toBeUndefined();
  });

  it("refuses any other image unless listed, naming the field and the entry", () => {
    const refused = decideImageCeiling(ceilings(), "evil.example/runtime:1", "registry.internal/runtime:1");
    expect(refused).toEqual({
      field: "spec.image",
      entry: "spec.ceilings.runtimeImages",
      message: "spec.image: runtime image 'evil.example/runtime:1' is not allowed by the LeviathPolicy (spec.ceilings.runtimeImages; allowed: registry.internal/runtime:1 (the controller's default))",
    });
    expect(decideImageCeiling(ceilings({ runtimeImages: ["evil.example/*"] }), "evil.example/runtime:1", undefined)).toBeUndefined();
  });
});

describe("decideKindCeiling", () => {
  it("always allows the reference runtime, named or not", () => {
    expect(decideKindCeiling(ceilings(), undefined)).toBeUndefined();
    expect(decideKindCeiling(ceilings(), "leviath")).toBeUndefined();
  });

  it("refuses any other kind unless listed (none by default), naming the field and the entry", () => {
    expect(decideKindCeiling(ceilings(), "claude-code")).toEqual({
      field: "spec.runtime.kind",
      entry: "spec.ceilings.runtimeKinds",
      message: "spec.runtime.kind: runtime kind 'claude-code' is not allowed by the LeviathPolicy (spec.ceilings.runtimeKinds; allowed: leviath (always))",
    });
    expect(decideKindCeiling(ceilings({ runtimeKinds: ["codex"] }), "claude-code")?.message).toContain("allowed: leviath (always), codex)");
    expect(decideKindCeiling(ceilings({ runtimeKinds: ["claude-code"] }), "claude-code")).toBeUndefined();
  });

  it("is checked before the image: an allowed image does not let a refused kind through", () => {
    const c = ceilings({ runtimeImages: ["registry.internal/*"] });
    expect(decideRuntimeCeilings({ ceilings: c }, { image: "registry.internal/cc:1", runtime: { kind: "claude-code" } }, undefined)?.field).toBe("spec.runtime.kind");
    expect(decideRuntimeCeilings({ ceilings: ceilings({ runtimeKinds: ["claude-code"] }) }, { image: "evil.example/cc:1", runtime: { kind: "claude-code" } }, undefined)?.field).toBe("spec.image");
    expect(decideRuntimeCeilings({ ceilings: { ...c, runtimeKinds: ["claude-code"] } }, { image: "registry.internal/cc:1", runtime: { kind: "claude-code" } }, undefined)).toBeUndefined();
  });
});

describe("decideTemplateCeiling", () => {
  const templates = [{ name: "claude-print" }, { name: "goose" }];
  it("lets an mcp-command Agent run only a template the policy declares, and looks at no other kind", () => {
    expect(decideTemplateCeiling(templates, { kind: "mcp-command", template: "goose" })).toBeUndefined();
    expect(decideTemplateCeiling([], { kind: "claude-code" })).toBeUndefined();
    expect(decideTemplateCeiling([], undefined)).toBeUndefined();
    expect(decideTemplateCeiling(templates, { kind: "mcp-command", template: "aider" })).toEqual({
      field: "spec.runtime.template",
      entry: "spec.runtimeTemplates",
      message: "spec.runtime.template: runtime template 'aider' is not declared by the LeviathPolicy (spec.runtimeTemplates; declared: claude-print, goose)",
    });
    expect(decideTemplateCeiling([], { kind: "mcp-command" })?.message).toBe("spec.runtime.template: runtime kind 'mcp-command' names no template (spec.runtimeTemplates; declared: none)");
  });

  it("is checked after the kind and before the image", () => {
    const policy = LeviathPolicySpecSchema.parse({ ceilings: { runtimeKinds: ["mcp-command"] } });
    const agent = { image: "evil.example/x:1", runtime: { kind: "mcp-command" as const, template: "aider" } };
    expect(decideRuntimeCeilings({ ceilings: ceilings() }, agent, undefined)?.field).toBe("spec.runtime.kind");
    expect(decideRuntimeCeilings(policy, agent, undefined)?.field).toBe("spec.runtime.template");
    expect(decideRuntimeCeilings({ ...policy, runtimeTemplates: [{ name: "aider" }] }, agent, undefined)?.field).toBe("spec.image");
  });

  it("an Agent names a template with kind mcp-command only", () => {
    const r = AgentSpecSchema.safeParse({ runtime: { kind: "claude-code", template: "goose" } });
    expect(r.success ? "accepted" : `${r.error.issues[0]!.path.join(".")}: ${r.error.issues[0]!.message}`).toBe("runtime.template: a template is for kind mcp-command only");
  });
});

describe("decideRunCeilings", () => {
  it("refuses yolo and unattended unless the admin allows them", () => {
    expect(decideRunCeilings(ceilings(), { mode: "interactive", allowTools: [] })).toBeUndefined();
    expect(decideRunCeilings(ceilings(), { mode: "headless", allowTools: [] })).toBeUndefined();
    expect(decideRunCeilings(ceilings(), { mode: "yolo", allowTools: [] })?.message)
      .toBe("spec.mode: 'yolo' is not allowed by the LeviathPolicy (spec.ceilings.runModes: interactive, headless)");
    expect(decideRunCeilings(ceilings(), { mode: "unattended", allowTools: [] })?.entry).toBe("spec.ceilings.runModes");
    expect(decideRunCeilings(ceilings({ runModes: ["yolo"] }), { mode: "yolo", allowTools: [] })).toBeUndefined();
  });

  it("refuses launch allows unless the admin allows them", () => {
    expect(decideRunCeilings(ceilings(), { mode: "interactive", allowTools: ["shell"] })).toEqual({
      field: "spec.allowTools",
      entry: "spec.ceilings.allowTools",
      message: "spec.allowTools: launch allows (shell) are not allowed by the LeviathPolicy (spec.ceilings.allowTools is false)",
    });
    expect(decideRunCeilings(ceilings({ allowTools: true }), { mode: "interactive", allowTools: ["shell"] })).toBeUndefined();
  });
});
