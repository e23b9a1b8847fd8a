import { describe, expect, it } from "vitest";
import { compileRules } from "./cel-library.ts";
import { ContextTaint } from "./context-taint.ts";
import { decidePermissionChoice, decideToolCall } from "./decide-tool-call.ts";
import type { ToolCallInput } from "./decide-tool-call.ts";
import type { GateMode } from "./gate.ts";
import type { Level } from "./levels.ts";
import type { PermissionMap } from "./permissions.ts";

function call(tool: string, taint: Level, mode: GateMode, userPermissions: PermissionMap = {}, extra: Partial<ToolCallInput> = {}): ToolCallInput {
  const context = new ContextTaint();
  if (taint !== "public") context.label("research", "r", taint);
  return {
    gate: {
      taintTracking: true, agentId: "run-1", callId: "c1", tool, context, mode, sessionRaises: new Set(),
      policy: { overrides: new Map(), allowlist: [], rules: compileRules([]) }, promptTimeoutSeconds: 3600, clock: () => 0,
    },
    permissions: { userPermissions },
    ...extra,
  };
}

const sources = (d: { events: readonly { decision_source: unknown }[] }) => d.events.map((e) => e.decision_source);

describe("decideToolCall (permission first, then the gate)", () => {
  it("deny refuses before the gate: no misleading YoloAutoApprove", () => {
    for (const mode of ["interactive", "yolo", "headless"] as const) {
      const got = decideToolCall(call("shell", "private", mode, { shell: "deny" }));
      expect(got).toMatchObject({ kind: "refuse", reason: "permission-denied", message: "[denied] Tool 'shell' is not permitted." });
      expect(got.events).toEqual([]);
    }
  });

  it("deny applies to submit_output too", () => {
    const got = decideToolCall(call("submit_output", "public", "yolo", { submit_output: "deny" }));
    expect(got).toMatchObject({ kind: "refuse", reason: "permission-denied", message: "[denied] Tool 'submit_output' is not permitted." });
  });

  it("submit_output is allowed by default, and then gated", () => {
    expect(decideToolCall(call("submit_output", "public", "interactive")).kind).toBe("run");
    expect(decideToolCall(call("submit_output", "private", "interactive")).kind).toBe("ask-gate");
  });

  it("public context, shell=ask: the approval prompt only, then AutoAllow", () => {
    const first = decideToolCall(call("shell", "public", "interactive"));
    expect(first).toMatchObject({ kind: "ask-permission", prompt: { tool: "shell", options: ["Allow once", "Allow for this stage", "Allow for this run", "Deny"], timeoutSeconds: 3600 } });
    const second = decideToolCall(call("shell", "public", "interactive", {}, { permissionApproved: true }));
    expect(second.kind).toBe("run");
    expect(sources(second)).toEqual(["AutoAllow"]);
  });

  it("private context, shell=ask: approval first, then the gate prompt", () => {
    expect(decideToolCall(call("shell", "private", "interactive")).kind).toBe("ask-permission");
    const second = decideToolCall(call("shell", "private", "interactive", {}, { permissionApproved: true }));
    expect(second.kind).toBe("ask-gate");
    expect(sources(second)).toEqual(["AutoBlock"]);
  });

  it("shell=allow without yolo still meets the gate (permission is not the gate)", () => {
    const got = decideToolCall(call("shell", "private", "interactive", { shell: "allow" }));
    expect(got.kind).toBe("ask-gate");
  });

  it("--allow shell does not waive the gate either", () => {
    const got = decideToolCall(call("shell", "private", "unattended", {}, { permissions: { launch: { shell: "allow" } } }));
    expect(got.kind).toBe("ask-gate");
  });

  it("yolo turns ask into allow and waives the gate, with both records", () => {
    const got = decideToolCall(call("shell", "private", "yolo"));
    expect(got.kind).toBe("run");
    expect(sources(got)).toEqual(["AutoBlock", "YoloAutoApprove"]);
  });

  it("headless: ask cannot be answered and is refused; a blocked gate is refused with the block text", () => {
    expect(decideToolCall(call("shell", "public", "headless"))).toMatchObject({
      kind: "refuse", reason: "approval-unavailable", message: "[denied] User declined tool call 'shell'.",
    });
    const blocked = decideToolCall(call("shell", "private", "headless", { shell: "allow" }));
    expect(blocked).toMatchObject({ kind: "refuse", reason: "gate-blocked" });
    expect(blocked.kind === "refuse" && blocked.message.startsWith("[blocked] Tool 'shell' would send Private-level data")).toBe(true);
    expect(sources(blocked)).toEqual(["AutoBlock"]);
  });

  it("permissionApproved never lifts a deny", () => {
    const got = decideToolCall(call("shell", "public", "interactive", { shell: "deny" }, { permissionApproved: true }));
    expect(got.kind).toBe("refuse");
  });

  it("maps approval answers", () => {
    expect([0, 1, 2, 3, undefined].map(decidePermissionChoice)).toEqual(["allow-once", "allow-stage", "allow-run", "decline", "decline"]);
  });
});
