// The admin's ceilings on what the untrusted parties choose (LeviathPolicy spec.ceilings), against the real API
// server: an Agent naming a runtime image the policy does not list, a Run asking for yolo or unattended, a Run
// with launch allows, an Agent naming a runtime kind the policy does not list or a template it does not declare. Each refusal is a condition naming
// the field and the policy entry, and no pod is created.
import { describe, expect, it } from "vitest";
import {
  applyPolicy, childrenOf, conditionOf, createAgent, createRun, TEST_RUNTIME_IMAGE, useOperatorWithoutPolicy, waitForCustom, type Custom,
} from "./operator-harness.ts";

const files = useOperatorWithoutPolicy("ceilings");

const waitForRunStatus = (name: string, check: (r: Custom) => boolean, what: string) => waitForCustom("runs", files.namespace, name, check, what);
/** Creates Agent `name` and a Run `<name>-run` of it: the Agent is refused with `refusal`, the Run waits Pending with no child. */
async function expectAgentAndRunRefused(name: string, spec: Record<string, unknown>, refusal: { code: string; message: string }): Promise<void> {
  await createAgent(files.namespace, name, spec);
  const agent = await waitForCustom("agents", files.namespace, name, (a) => a.status?.valid === false, `Agent ${name} to be refused`);
  expect(conditionOf(agent, "Valid")).toMatchObject({ status: "False", reason: "RefusedByPolicy", message: expect.stringContaining(refusal.message) });
  expect((agent.status as { findings?: unknown[] } | undefined)?.findings?.[0]).toEqual({
    severity: "error", code: refusal.code, message: refusal.message, fix: expect.stringMatching(/^change spec\.[\w.]+ of the Agent, or the admin allows it in spec\.[\w.]+ of the LeviathPolicy$/) as unknown,
  });
  await createRun(files.namespace, `${name}-run`, { agentRef: { name } });
  const run = await waitForRunStatus(`${name}-run`, (r) => r.status?.phase !== undefined, "the Run's status");
  expect(run.status?.phase).toBe("Pending");
  expect(conditionOf(run, "PolicyResolved")).toMatchObject({ status: "False", reason: "RefusedByPolicy", message: `Agent '${name}': ${refusal.message}` });
  expect(await childrenOf(files.namespace, `${name}-run`)).toEqual([]);
}

const hasPods = async (run: string) => (await childrenOf(files.namespace, run)).some((c) => c.ref.startsWith("Pod/"));

describe("the policy's ceilings", () => {
  it("refuse an Agent's own runtime image unless listed; the controller's default image is always allowed", async () => {
    await createAgent(files.namespace, "own-image", { image: "evil.example/exfiltrate:1" });
    const agent = await waitForCustom("agents", files.namespace, "own-image", (a) => a.status?.valid === false, "the Agent to be refused");
    expect(conditionOf(agent, "Valid")).toMatchObject({ status: "False", reason: "RefusedByPolicy" });
    expect(conditionOf(agent, "Valid")?.message).toContain("spec.image: runtime image 'evil.example/exfiltrate:1' is not allowed by the LeviathPolicy (spec.ceilings.runtimeImages");
    await createRun(files.namespace, "own-image-run", { agentRef: { name: "own-image" } });
    const run = await waitForRunStatus("own-image-run", (r) => r.status?.phase !== undefined, "the Run's status");
    expect(run.status?.phase).toBe("Pending");
    expect(conditionOf(run, "PolicyResolved")).toMatchObject({ status: "False", reason: "RefusedByPolicy" });
    expect(conditionOf(run, "PolicyResolved")?.message).toContain("Agent 'own-image': spec.image: runtime image 'evil.example/exfiltrate:1' is not allowed");
    expect(await childrenOf(files.namespace, "own-image-run")).toEqual([]);

    await createAgent(files.namespace, "default-image", { image: TEST_RUNTIME_IMAGE });
    await waitForCustom("agents", files.namespace, "default-image", (a) => a.status?.valid === true, "the default image to be allowed");

    await applyPolicy({ ceilings: { runtimeImages: ["evil.example/*"] } });
    await waitForCustom("agents", files.namespace, "own-image", (a) => a.status?.valid === true, "the listed image to be allowed");
    await waitForRunStatus("own-image-run", (r) => conditionOf(r, "PolicyResolved")?.status === "True", "the waiting Run to start once allowed");
    expect(await hasPods("own-image-run")).toBe(true);
  });

  it.each([
    ["yolo", { mode: "yolo" }, "spec.mode: 'yolo' is not allowed by the LeviathPolicy (spec.ceilings.runModes: interactive, headless)"],
    ["unattended", { mode: "unattended" }, "spec.mode: 'unattended' is not allowed by the LeviathPolicy (spec.ceilings.runModes: interactive, headless)"],
    ["allowTools", { allowTools: ["shell"] }, "spec.allowTools: launch allows (shell) are not allowed by the LeviathPolicy (spec.ceilings.allowTools is false)"],
  ])("refuse a Run's %s unless the admin allows it, with no pod created", async (what, spec, message) => {
    await applyPolicy({ ceilings: { allowTools: false } });
    await createAgent(files.namespace, `for-${what.toLowerCase()}`, {});
    const name = `run-${what.toLowerCase()}`;
    await createRun(files.namespace, name, { agentRef: { name: `for-${what.toLowerCase()}` }, ...spec });
    const run = await waitForRunStatus(name, (r) => r.status?.phase !== undefined, "the Run's status");
    expect(run.status?.phase).toBe("Pending");
    expect(conditionOf(run, "PolicyResolved")).toMatchObject({ status: "False", reason: "RefusedByPolicy", message });
    expect(await childrenOf(files.namespace, name)).toEqual([]);
  });

  it("let a Run use yolo and launch allows once the admin lists them", async () => {
    await createAgent(files.namespace, "free", {});
    await applyPolicy({ ceilings: { runModes: ["interactive", "yolo"], allowTools: true } });
    await createRun(files.namespace, "free-run", { agentRef: { name: "free" }, mode: "yolo", allowTools: ["shell"] });
    await waitForRunStatus("free-run", (r) => conditionOf(r, "PolicyResolved")?.status === "True", "the allowed Run to resolve");
    expect(await hasPods("free-run")).toBe(true);
  });

  it("refuse an Agent's runtime kind unless listed, and start a listed one with 'leviath adapter <kind>'", async () => {
    await applyPolicy({ ceilings: { allowTools: false } });
    await expect(createAgent(files.namespace, "bogus-kind", { runtime: { kind: "cursor" } })).rejects.toThrow(/spec\.runtime\.kind/);
    await expectAgentAndRunRefused("claude", { runtime: { kind: "claude-code" } }, {
      code: "runtime-kind-not-allowed", message: "spec.runtime.kind: runtime kind 'claude-code' is not allowed by the LeviathPolicy (spec.ceilings.runtimeKinds; allowed: leviath (always))",
    });

    await applyPolicy({ ceilings: { runtimeKinds: ["claude-code"] } });
    await waitForCustom("agents", files.namespace, "claude", (a) => a.status?.valid === true, "the listed kind to be allowed");
    await waitForRunStatus("claude-run", (r) => conditionOf(r, "PolicyResolved")?.status === "True", "the waiting Run to start once allowed");
    const engine = (await childrenOf(files.namespace, "claude-run")).find((c) => c.ref === "Pod/claude-run-engine")?.obj as { spec: { containers: { name: string; command?: string[]; args?: string[] }[] } } | undefined;
    expect(engine?.spec.containers.find((c) => c.name === "agent")).toMatchObject({ command: ["leviath", "adapter", "claude-code"], args: ["--interaction-timeout-seconds", "3600"] });
  });

  it("refuse an mcp-command Agent whose template the policy does not declare, and pin a declared one into runtime.json", async () => {
    await applyPolicy({ ceilings: { runtimeKinds: ["mcp-command"] } });
    await expectAgentAndRunRefused("generic", { runtime: { kind: "mcp-command", template: "claude-print" } }, {
      code: "runtime-template-not-declared", message: "spec.runtime.template: runtime template 'claude-print' is not declared by the LeviathPolicy (spec.runtimeTemplates; declared: none)",
    });

    const template = { name: "claude-print", provider: "anthropic", command: ["claude", "-p", "{task}", "--mcp-config", "{mcp_config}", "--strict-mcp-config", "--tools", ""] };
    await applyPolicy({ ceilings: { runtimeKinds: ["mcp-command"] }, runtimeTemplates: [template] });
    await waitForCustom("agents", files.namespace, "generic", (a) => a.status?.valid === true, "the declared template to be allowed");
    await waitForRunStatus("generic-run", (r) => conditionOf(r, "PolicyResolved")?.status === "True", "the waiting Run to start once declared");
    const children = await childrenOf(files.namespace, "generic-run");
    const engine = children.find((c) => c.ref === "Pod/generic-run-engine")?.obj as { spec: { containers: { name: string; command?: string[] }[] } } | undefined;
    expect(engine?.spec.containers.find((c) => c.name === "agent")?.command).toEqual(["leviath", "adapter", "mcp-command"]);
    const snapshot = children.filter((c) => c.ref.startsWith("ConfigMap/")).map((c) => (c.obj as { data?: Record<string, string> }).data?.["runtime.json"]).find((d) => d !== undefined);
    expect(JSON.parse(snapshot!).template).toEqual({ ...template, env: {}, stdin: "none" });
  });
});
