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

  it("private context, shell=ask: one prompt names the approval and the gate; a granted ask meets the gate's prompt alone", () => {
    const first = decideToolCall(call("shell", "private", "interactive"));
    expect(first.kind === "ask-held" && first.holds.map((h) => h.check)).toEqual(["permission", "gate"]);
    expect(sources(first)).toEqual(["AutoBlock"]);
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

describe("decideToolCall: the read-path step between the permission and the gate", () => {
  // A lexical filesystem: every path is its own real path, and the workdir is /work.
  const fs = { realpath: (p: string) => p };
  const paths = (requests: string[], access: "read" | "write" = "read") => ({ requests, access, context: { workdir: "/work", policy: null, fs } });
  const outside = { paths: paths(["/etc/passwd"]) };

  it("refuses a path outside the workdir with its row's code and message, before the gate (no records)", () => {
    const got = decideToolCall(call("read_file", "private", "interactive", {}, outside));
    expect(got).toMatchObject({ kind: "refuse", reason: "outside-workdir", gate: undefined });
    expect(got.kind === "refuse" && got.message.startsWith("[error] ")).toBe(true);
    expect(got.events).toEqual([]);
  });

  it("decides the permission before the paths: a deny stops the call before any path is resolved; an ask meets a path's refusal without a prompt", () => {
    const resolved: string[] = [];
    const counting = { requests: ["/etc/passwd"], access: "read" as const, context: { workdir: "/work", policy: null, fs: { realpath: (p: string) => (resolved.push(p), p) } } };
    expect(decideToolCall(call("read_file", "public", "interactive", { read_file: "deny" }, { paths: counting }))).toMatchObject({ kind: "refuse", reason: "permission-denied" });
    expect(resolved).toEqual([]);
    expect(decideToolCall(call("write_file", "public", "interactive", {}, { paths: { ...counting, access: "write" } }))).toMatchObject({ kind: "refuse", reason: "outside-workdir" });
  });

  it("hands the resolved paths to a call that runs, so the executor opens what was judged", () => {
    const got = decideToolCall(call("read_file", "public", "interactive", {}, { paths: paths(["notes.txt", "/dev/null"]) }));
    expect(got).toMatchObject({ kind: "run", source: "auto_allow" });
    expect(got.kind === "run" && got.paths?.map((p) => [p.request, p.resolution.code])).toEqual([["notes.txt", "inside-workdir"], ["/dev/null", "null-device"]]);
  });

  it("refuses several paths only when every one is refused", () => {
    expect(decideToolCall(call("read_files", "public", "interactive", {}, { paths: paths(["/etc/a", "ok.txt"]) })).kind).toBe("run");
    expect(decideToolCall(call("read_files", "public", "interactive", {}, { paths: paths(["/etc/a", "/etc/b"]) }))).toMatchObject({ kind: "refuse", reason: "outside-workdir" });
  });

  it("a call continuing after a prompt skips the steps it passed, but its paths are resolved again", () => {
    const afterGate = decideToolCall(call("shell", "private", "interactive", {}, { passed: { permission: true, gate: "user_allow_once" } }));
    expect(afterGate).toMatchObject({ kind: "run", source: "user_allow_once", permission: undefined, gate: undefined, events: [] });
    const moved = decideToolCall(call("read_file", "private", "interactive", { read_file: "deny" }, { ...outside, passed: { permission: true, gate: "auto_allow" } }));
    expect(moved).toMatchObject({ kind: "refuse", reason: "outside-workdir" });
  });

  it("a run the person approved at its permission prompt counts as user_approved unless the gate decided more", () => {
    expect(decideToolCall(call("write_file", "public", "interactive", {}, { permissionApproved: true, answeredPrompt: true }))).toMatchObject({ kind: "run", source: "user_approved" });
    // A scoped grant is no answer of this call's prompt: the gate's own source stands.
    expect(decideToolCall(call("write_file", "public", "interactive", {}, { permissionApproved: true }))).toMatchObject({ kind: "run", source: "auto_allow" });
    expect(decideToolCall(call("shell", "private", "yolo", {}, { answeredPrompt: true }))).toMatchObject({ kind: "run", source: "yolo_auto_approve" });
  });
});
