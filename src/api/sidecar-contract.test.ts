import { describe, expect, it } from "vitest";
import { CALL_DECISION_SOURCES, DECISION_SOURCES } from "./decision-sources.ts";
import { buildRefusalMessage, lookupRefusalStatus, REFUSALS, type RecordedRefusalCode, type RefusalCode, type RefusalRow } from "./sidecar-contract.ts";

/**
 * Every refusal as the sidecar answered it before the table (transcribed from the call sites at e4691b9: the
 * `#deny`/`buildDeny` pairs, `REFUSAL_STATUS` of http/call-status.ts, the routes' literal statuses, the seed route's
 * `statusOf`, the request guard): the HTTP status and, for a recorded refusal, the audit's decision source.
 */
const BEFORE: Readonly<Record<string, { status?: number; source?: string }>> = {
  "invalid-request": { status: 400 },
  "invalid-arguments": { status: 400, source: "invalid_arguments" },
  // Added with issue 41: was `invalid-request`, unrecorded, for a call whose body or deadline did not parse.
  "invalid-call": { status: 400, source: "invalid_arguments" },
  "result-too-large": { status: 400, source: "invalid_arguments" },
  "duplicate-call-id": { status: 409 },
  "tool-unavailable": { status: 403, source: "tool_unavailable" },
  "permission-denied": { status: 403, source: "permission_deny" },
  "approval-unavailable": { status: 403, source: "approval_unavailable" },
  "approval-declined": { status: 403, source: "user_declined" },
  "approval-timed-out": { status: 403, source: "approval_timed_out" },
  "gate-blocked": { status: 403, source: "auto_block" },
  "gate-denied": { status: 403, source: "user_denied" },
  "gate-timed-out": { status: 403, source: "gate_timed_out" },
  "integrity-held": { status: 403, source: "integrity_held" },
  "not-declared": { status: 403, source: "read_path" },
  "not-granted": { status: 403, source: "read_path" },
  "unresolvable": { status: 403, source: "read_path" },
  "unverifiable": { status: 403, source: "read_path" },
  "outside-workdir": { status: 403, source: "workdir" },
  "escapes-workdir": { status: 403, source: "workdir" },
  "symlink-escape": { status: 403, source: "workdir" },
  "workspace-missing": { status: 403, source: "workdir" },
  "path-changed": { status: 403, source: "path_changed" },
  "hard-link": { status: 403, source: "hard_link" },
  "local-address": { status: 403, source: "local_network" },
  "client-gave-up": { status: 403, source: "client_gave_up" },
  "pending-full": { status: 503, source: "pending_full" },
  "audit-failed": { status: 503, source: "audit_failed" },
  "result-not-stored": { status: 503, source: "audit_failed" },
  "sidecar-stopping": { status: 503 },
  "unknown-call": { status: 404 },
  "not-run": { status: 409 },
  "unknown-stage": { status: 404 },
  // Recorded by hand with this source before (tool-call-service.ts, mcp-stage.ts): now its row's.
  "transition-not-allowed": { status: 403, source: "transition" },
  "approvals-by-resource": { status: 403 },
  "approval-token-required": { status: 401 },
  "unknown-approval": { status: 404 },
  "approval-withdrawn": { status: 410 },
  "request-too-large": { status: 413 },
  "internal-error": { status: 500 },
  "not-found": { status: 404 },
  "host-not-allowed": { status: 403 },
  "browser-request": { status: 403 },
  "runtime-token-required": { status: 401 },
  "not-bound": { status: 503 },
  "binding-given": { status: 409 },
  "binding-unavailable": { status: 503 },
  "invalid-seed": { status: 422 },
  "seed-outside-workdir": { status: 403 },
  "seed-outside-blueprint": { status: 403 },
  "seed-commands-disabled": { status: 403 },
  "seed-command-not-safe": { status: 403 },
  "seed-unreadable": { status: 422 },
  "seed-command-failed": { status: 422 },
  "seed-command-timed-out": { status: 422 },
  "seed-command-capped": { status: 422 },
  "sidecar-unavailable": {},
  "sidecar-invalid-response": {},
};

const rows = Object.entries(REFUSALS) as [RefusalCode, RefusalRow][];

describe("the refusal table", () => {
  it("answers every code with the status and decision source it had before", () => {
    expect(Object.keys(REFUSALS).sort()).toEqual(Object.keys(BEFORE).sort());
    for (const [code, row] of rows) expect({ code, status: row.status, source: row.source }).toEqual({ code, ...BEFORE[code] });
  });

  it("has codes that are unique, stable kebab-case words", () => {
    // An object literal keeps the last of two equal keys: the count of distinct codes is the count of rows.
    expect(new Set(rows.map(([code]) => code)).size).toBe(rows.length);
    for (const [code] of rows) expect(code).toMatch(/^[a-z]+(-[a-z]+)*$/);
  });

  it("maps every code a route can return to an HTTP status, and only the client's own have none", () => {
    for (const [code, row] of rows) {
      expect(row.status === undefined, code).toBe(row.outcome === "fail-closed");
      if (row.status !== undefined) expect(lookupRefusalStatus(code), code).toBe(row.status);
    }
  });

  it("names only decision sources of their table, a call's for the refusal of a call", () => {
    const documented = Object.keys(DECISION_SOURCES);
    const ofCalls: readonly string[] = CALL_DECISION_SOURCES;
    const onCalls: readonly RecordedRefusalCode[] = ["audit-failed", "invalid-arguments", "path-changed", "gate-blocked"];
    for (const [code, row] of rows) if (row.source !== undefined) expect(documented, code).toContain(row.source);
    for (const code of onCalls) expect(ofCalls, code).toContain(REFUSALS[code].source);
    expect(ofCalls).not.toContain(REFUSALS["transition-not-allowed"].source);
  });

  it("keeps the messages the model was given", () => {
    expect(buildRefusalMessage("tool-unavailable", "shell", "plan")).toBe("[unavailable] Tool 'shell' is not available in stage 'plan'.");
    expect(buildRefusalMessage("invalid-arguments", "read_file", "path: Required")).toBe("[error] Invalid arguments for 'read_file': path: Required");
    expect(buildRefusalMessage("audit-failed", "shell")).toBe("[denied] Tool 'shell' was not run: its audit record could not be written.");
    expect(buildRefusalMessage("sidecar-stopping", "shell")).toBe("[denied] Tool 'shell' was not run: the sidecar is stopping.");
    expect(buildRefusalMessage("client-gave-up", "shell")).toBe("[denied] Tool 'shell' was not run: its client had stopped waiting for the answer.");
    expect(buildRefusalMessage("pending-full", "shell", 256)).toBe("[denied] Tool 'shell' was not run: 256 calls are already pending (or their arguments fill the pending budget); settle some and retry.");
    expect(buildRefusalMessage("not-declared", "path 'x' is outside")).toBe("[error] path 'x' is outside");
    expect(buildRefusalMessage("permission-denied", "[denied] Tool 'shell' is not permitted.")).toBe("[denied] Tool 'shell' is not permitted.");
    expect(buildRefusalMessage("request-too-large")).toBe("request body exceeded 16 MiB");
    expect(buildRefusalMessage("sidecar-unavailable", "shell", "ECONNREFUSED")).toBe("[denied] Tool 'shell' was not run: the sidecar did not answer (ECONNREFUSED).");
  });
});
