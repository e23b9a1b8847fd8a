import { describe, expect, it } from "vitest";
import type { HoldingCheck } from "../../policy/held-call.ts";
import { decideSettlement } from "./approval-settlement.ts";
import type { ApprovalSettlement } from "./approvals.ts";

// One answer to a prompt naming several holds (issue 44): what it means for each hold it covers.
const pending = { agentId: "run-1", tool: "shell", taint: "private" as const, clearance: "public" as const };
const settle = (held: readonly HoldingCheck[], s: ApprovalSettlement) =>
  decideSettlement({ kind: held[0] === "gate" ? "taint_gate" : "tool_approval", tool: "shell", pending: held.includes("gate") ? pending : undefined, held }, s, () => 0);
const sources = (a: ReturnType<typeof settle>) => ("events" in a ? a.events.map((e) => e.decision_source) : []);

describe("decideSettlement of a held prompt", () => {
  it.each([
    // The permission takes the answer's scope; the gate allows once (never "for the session"); integrity once.
    [["permission", "gate"], "allowOnce", { kind: "held-allowed", scope: "once", source: "user_allow_once" }, ["UserAllowOnce"]],
    [["permission", "gate", "integrity"], "allowForStage", { kind: "held-allowed", scope: "stage", source: "user_allow_once" }, ["UserAllowOnce"]],
    [["permission", "gate"], "allowForRun", { kind: "held-allowed", scope: "run", source: "user_allow_once" }, ["UserAllowOnce"]],
    [["permission", "integrity"], "allowForRun", { kind: "held-allowed", scope: "run", source: undefined }, []],
    [["gate", "integrity"], "allowForRun", { kind: "held-allowed", scope: undefined, source: "user_allow_once" }, ["UserAllowOnce"]],
    // A refusal: the first hold's code, the gate's UserDenied on record when it was held.
    [["permission", "gate"], "deny", { kind: "deny", code: "approval-declined", message: "[denied] User declined tool call 'shell'." }, ["UserDenied"]],
    [["gate", "integrity"], "deny", { kind: "deny", code: "gate-denied" }, ["UserDenied"]],
    [["permission", "integrity"], "deny", { kind: "deny", code: "approval-declined" }, []],
  ] as const)("%j answered %s", (held, decision, want, events) => {
    const got = settle(held, { kind: "answer", decision });
    expect(got).toMatchObject(want);
    expect(sources(got)).toEqual(events);
  });

  it("an expiry refuses with the first hold's timed-out code; a withdrawal and a stop are as for any prompt", () => {
    expect(settle(["permission", "gate"], { kind: "expired" })).toMatchObject({ kind: "deny", code: "approval-timed-out" });
    expect(settle(["gate", "integrity"], { kind: "expired" })).toMatchObject({ kind: "deny", code: "gate-timed-out" });
    expect(settle(["permission", "gate"], { kind: "withdrawn" })).toEqual({ kind: "withdrawn" });
    expect(settle(["permission", "gate"], { kind: "cancelled" })).toEqual({ kind: "stopping" });
  });
});
