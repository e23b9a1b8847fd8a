import { describe, expect, it } from "vitest";
import type { AskBody } from "../core/call-outcomes.ts";
import { PendingCalls } from "./pending-prompt.ts";

/** An ask for call `id` on prompt `approval`. */
const ask = (id: string, approval: string): AskBody =>
  ({ id, tool: "shell", decision: "ask", approval: { id: approval, kind: "tool_approval", callId: id, tool: "shell", stage: "0", prompt: "", options: [], raisedAt: "2026-12-07T00:00:00Z" } });

describe("PendingCalls: which session's end withdraws a call answered pending", () => {
  it("names the calls last answered pending in a session, and a later naming in another session moves the call there", () => {
    const pending = new PendingCalls();
    pending.remember(ask("c1", "p1"), "s1");
    pending.remember(ask("c2", "p2"), "s1");
    pending.remember(ask("c3", "p3"), "s2");
    expect([pending.callsOf("s1"), pending.callsOf("s2")]).toEqual([["c1", "c2"], ["c3"]]);
    // Collected from s2 (wait_for_approval answered pending again there): s1 ending no longer withdraws it.
    pending.remember(ask("c1", "p1"), "s2");
    expect([pending.callsOf("s1"), pending.callsOf("s2")]).toEqual([["c2"], ["c3", "c1"]]);
    expect(pending.find("p1")).toEqual({ call: "c1", tool: "shell", session: "s2" });
    expect(pending.callsOf("s3")).toEqual([]);
  });
});
