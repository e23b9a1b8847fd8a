import { describe, expect, it } from "vitest";
import { RunPolicySchema } from "../../api/run-policy.ts";
import type { AuditLine } from "./audit.ts";
import { formatExplanation, formatWouldFlips, pickCall } from "./why.ts";
import { explainCall, type ExplainInput } from "./why-explain.ts";

const SANDBOX = { kind: "none", network: true, mounts: [], persist: false, onUnavailable: "error", source: "default" };
const rp = RunPolicySchema.parse({
  agent: { key: "ns/notes", name: "notes" },
  stages: [{ name: "survey", availableTools: ["read_file", "shell"], toolPermissions: { shell: "deny" }, sandbox: SANDBOX }, { name: "digest", sandbox: SANDBOX }],
  entryStage: "survey",
  launch: { mode: "interactive", allow: [] },
  toolPermissions: { blueprint: { write_file: "ask" }, ceiling: { web_fetch: "deny", http_get: "ask" }, allowBlueprintPermissions: false },
  readPaths: { declared: [], granted: [], allowBlueprintReadPaths: false },
  taint: { tracking: true, allowlist: [], rules: [], toolOverrides: {} },
  limits: { interactionTimeoutSeconds: 60, shellTimeoutSeconds: 10 },
});
const rec = (r: Record<string, unknown>): Record<string, unknown> => ({ timestamp: 1, agent_id: "run", stage: "survey", ...r });
const explain = (decision: Record<string, unknown>, more: Partial<ExplainInput> = {}) => explainCall({ records: { decision: rec(decision) }, runPolicy: rp, agentKey: "ns/notes", syntax: "yaml", ...more });

describe("explainCall", () => {
  it("names the layer that set a permission and changes that layer, narrowest first", () => {
    const ceiling = explain({ tool_name: "web_fetch", decision: "deny", decision_source: "permission_deny" });
    expect(ceiling.rule).toBe(`tool permission: web_fetch is 'deny', set by the LeviathPolicy's ceiling (spec.toolPermissions or spec.agentToolPermissions["ns/notes"]: web_fetch = deny)`);
    expect(ceiling.changes).toEqual([{ where: "the LeviathPolicy (kubectl edit leviathpolicy cluster)", lines: ["spec:", "  agentToolPermissions:", '    "ns/notes":', "      web_fetch: ask"] }]);
    const stage = explain({ tool_name: "shell", decision: "deny", decision_source: "permission_deny" });
    expect(stage.rule).toContain("the Agent's request (stage 'survey' toolPermissions: shell = deny)");
    expect(stage.changes[0]?.lines).toEqual(["spec:", "  stages:", "    - name: survey    # spec.stages[0]", "      toolPermissions:", "        shell: ask"]);
    const byDefault = explain({ tool_name: "send_email", decision: "ask", decision_source: "permission_ask" });
    expect(byDefault.rule).toBe("tool permission: send_email is 'ask', set by the built-in default for send_email (ask; nothing configures it)");
    expect(byDefault.changes[0]?.lines.at(-1)).toBe("      send_email: allow");
    expect(explain({ tool_name: "write_file", decision: "ask", decision_source: "permission_ask" }, { syntax: "toml" }).changes).toEqual([{ where: "agent.leviath", lines: ["[tool_permissions]", 'write_file = "allow"'] }]);
    expect(explain({ tool_name: "web_fetch", decision: "deny", decision_source: "permission_deny" }, { syntax: "toml", runPolicy: undefined }).changes[0]).toEqual({ where: "config.toml", lines: ['[agent_tool_permissions."ns/notes"]', 'web_fetch = "ask"'] });
  });

  it("explains the taint gate with its taint, clearance and target, and the allowlist rule that would pass it", () => {
    const gate = { tool_name: "http_post", taint_level: "Private", clearance: "Public", allowed: false, decision_source: "AutoBlock" };
    const e = explainCall({ records: { decision: rec({ tool_name: "http_post", decision: "ask", decision_source: "auto_block", target: "api.example.com" }), gate }, runPolicy: rp, agentKey: "ns/notes", syntax: "yaml" });
    expect(e.rule).toBe("taint gate: the context holds private data and http_post may carry out only public, to 'api.example.com'; no allowlist or CEL rule allowed it");
    expect(e.changes[0]?.lines.at(-1)).toBe('      - {tool: http_post, to: ["api.example.com"], maxSensitivity: private}');
    const toml = explainCall({ records: { decision: rec({ tool_name: "shell", decision: "ask", decision_source: "auto_block" }), gate: { ...gate, taint_level: "Internal" } }, runPolicy: rp, agentKey: "ns/notes", syntax: "toml" });
    expect(toml.changes).toEqual([{ where: "policy.toml", lines: ["[[allowlist]]", 'tool = "shell"', 'max_sensitivity = "internal"'] }]);
  });

  it("explains read paths, a tool the stage does not offer, and answers given by a person", () => {
    const undeclared = explain({ tool_name: "read_file", decision: "deny", decision_source: "read_path", code: "not-declared", paths: ["/data/finance/q3.csv"] });
    expect(undeclared.changes.map((c) => c.where)).toEqual(["the Agent (kubectl edit agent notes -n ns)", "the LeviathPolicy (kubectl edit leviathpolicy cluster)"]);
    expect(undeclared.changes[1]?.lines).toContain("      - {path: /data/finance/q3.csv, volume: {configMap: {name: <name>}}}");
    expect(explain({ tool_name: "read_file", decision: "deny", decision_source: "read_path", code: "not-granted", paths: ["/d"] }, { syntax: "toml" }).changes).toEqual([{ where: "config.toml", lines: ['[agent_read_paths."ns/notes"]', 'allow = ["/d"]'] }]);
    const outside = explain({ tool_name: "read_file", decision: "deny", decision_source: "workdir", code: "outside-workdir", paths: ["/etc/hostname"] });
    expect(outside.rule).toContain("/etc/hostname is outside the Run's workspace, and no read path");
    expect(outside.changes).toHaveLength(2);
    // A grant of system or secret files says what it opens; an ordinary data path does not.
    expect(outside.changes[1]?.lines[0]).toMatch(/^# caution: \/etc\/hostname holds system or secret files/);
    expect(undeclared.changes[1]?.lines[0]).toBe("spec:");
    expect(explain({ tool_name: "read_file", decision: "deny", decision_source: "read_path", code: "not-granted", paths: ["/home/ann/.ssh/id_ed25519"] }, { syntax: "toml" }).changes[0]?.lines[0]).toMatch(/^# caution: /);
    expect(explain({ tool_name: "write_file", decision: "deny", decision_source: "workdir", code: "outside-workdir" }).changes).toEqual([]);
    expect(explain({ tool_name: "list_dir", decision: "deny", decision_source: "tool_unavailable" }).changes[0]?.lines.at(-1)).toBe("      availableTools: [read_file, shell, list_dir]");
    const denied = explain({ tool_name: "shell", decision: "deny", decision_source: "user_denied", approved_by: "alice", approval_reason: "no" });
    expect(denied).toEqual({ rule: "a person denied it at the taint gate by alice (reason: no)", changes: [], note: "answer the next prompt with 'kubectl leviath approve'" });
    expect(explain({ tool_name: "shell", decision: "deny", decision_source: "user_declined", approved_by: "bob" }).rule).toBe("the prompt was declined by bob");
    const expired = explain({ tool_name: "shell", decision: "deny", decision_source: "approval_timed_out", code: "approval-timed-out" });
    expect(expired.rule).toMatch(/^nobody answered the prompt within the interaction timeout/);
    expect(expired.changes).toEqual([]);
    expect(explain({ tool_name: "shell", decision: "deny", decision_source: "gate_timed_out" }).rule).toMatch(/^nobody answered the taint gate's prompt within the interaction timeout/);
  });
});

describe("pickCall and formatExplanation", () => {
  const line = (file: string, record: Record<string, unknown>): AuditLine => ({ run: "r", file, record });
  const lines = [
    line("stages/0/decisions.jsonl", rec({ call_id: "a", tool_name: "shell", decision: "ask", decision_source: "auto_block" })),
    line("stages/0/taint_audit.jsonl", { tool_name: "shell", taint_level: "Internal", clearance: "Public", allowed: true, decision_source: "UserAllowOnce" }),
    line("stages/0/decisions.jsonl", rec({ call_id: "a", tool_name: "shell", decision: "allow", decision_source: "user_allow_once" })),
    line("stages/0/decisions.jsonl", rec({ call_id: "b", tool_name: "web_fetch", decision: "deny", decision_source: "permission_deny" })),
    line("stages/0/decisions.jsonl", rec({ call_id: "c", tool_name: "read_file", decision: "allow", decision_source: "auto_allow" })),
  ];

  it("takes the last refused or asked call, or the one named, with the gate record before it", () => {
    expect(pickCall(lines, undefined)?.id).toBe("b");
    expect(pickCall(lines, "a")?.records).toEqual({ decision: lines[2]!.record, gate: lines[1]!.record });
    expect(pickCall(lines, "zz")).toBeUndefined();
    expect(pickCall(lines.slice(2, 3), undefined)).toBeUndefined();
  });

  it("prints the call, the rule and the change as a snippet to merge", () => {
    const picked = pickCall(lines, "b")!;
    const text = formatExplanation("r", "b", picked.records, explainCall({ records: picked.records, runPolicy: rp, agentKey: "ns/notes", syntax: "yaml" }));
    expect(text).toBe([
      "run r, call b (web_fetch, stage survey): deny, decision source permission_deny",
      `rule:    tool permission: web_fetch is 'deny', set by the LeviathPolicy's ceiling (spec.toolPermissions or spec.agentToolPermissions["ns/notes"]: web_fetch = deny)`,
      "change:  the smallest that would allow it",
      "  in the LeviathPolicy (kubectl edit leviathpolicy cluster):",
      "      spec:", "        agentToolPermissions:", '          "ns/notes":', "            web_fetch: ask",
      "note:    'ask' lets a person approve each call; 'allow' runs it without asking",
      "",
    ].join("\n"));
  });
});

describe("which grants carry a caution", () => {
  it("flags system locations and secret files, not data paths", async () => {
    const { isSensitiveGrant } = await import("./why-change.ts");
    for (const p of ["/etc/passwd", "/etc", "/proc/1/environ", "/root/notes", "/var/run/secrets/kubernetes.io/serviceaccount/token", "/data/.ssh/config", "/srv/tls/server.key", "glob:/etc/**", "/"]) expect(isSensitiveGrant(p), p).toBe(true);
    for (const p of ["/data/finance/q3.csv", "/srv/docs", "glob:/data/**/*.md", "/opt/reports/etcetera.txt"]) expect(isSensitiveGrant(p), p).toBe(false);
  });

  it("explains an integrity hold in one sentence with the change that would allow it", () => {
    const held = explain({
      tool_name: "slack__send_direct_message", decision: "deny", decision_source: "integrity_held", code: "integrity-held", target: "Alice",
      integrity: "untrusted", integrity_hold: "untrusted-context", untrusted_entry: { region: "conversation", id: "c7", tool: "web_fetch" },
    });
    expect(held.rule).toBe("integrity: slack__send_direct_message was held because the context holds text a third party could have written (entry 'conversation/c7' from 'web_fetch'), and 'slack__send_direct_message' acts; to allow it, add {tool: 'slack__send_direct_message', to: ['Alice']} to spec.integrity.allowlist, classify 'slack__send_direct_message' as effect: read if it acts on nothing, or evict the untrusted entry");
    expect(held.changes).toEqual([{ where: "the LeviathPolicy (kubectl edit leviathpolicy cluster)", lines: ["spec:", "  integrity:", "    allowlist:", '      - {tool: slack__send_direct_message, to: ["Alice"]}'] }]);
    const target = explain({
      tool_name: "bank__send_money", decision: "deny", decision_source: "integrity_held", target: "GB33BUKB", integrity_hold: "untrusted-target",
      untrusted_argument: "recipient", untrusted_entry: { region: "conversation", id: "c3", tool: "bank__get_transactions" },
    });
    expect(target.rule).toContain("its argument 'recipient' came from text a third party could have written (entry 'conversation/c3' from 'bank__get_transactions')");
    expect(target.changes).toEqual([]);
    const asked = explain({ tool_name: "http_get", decision: "ask", decision_source: "permission_ask", integrity_hold: "unlisted-target", target: "evil.example" });
    expect(asked.rule).toContain("'evil.example' is on no allowlist rule of 'http_get'");
    expect(asked.changes[0]?.lines.slice(0, 2)).toEqual(["spec:", "  taint:"]);
  });
});

describe("would-flips under a candidate policy", () => {
  const line = (record: Record<string, unknown>): AuditLine => ({ file: "stages/0/decisions.jsonl", record: rec(record) }) as AuditLine;
  const lines = [
    line({ call_id: "c1", tool_name: "read_file", decision: "would_flip", decision_source: "policy_candidate", would_flip: { enforcement: "warn", policy_generation: 7, now: "allow", candidate: "deny", differs: "permission allow (default), taint_disabled -> permission-denied" } }),
    line({ call_id: "c1", tool_name: "read_file", decision: "allow", decision_source: "taint_disabled" }),
  ];

  it("says how the candidate would have decided the call, and keeps the call's own decision as its decision", () => {
    expect(pickCall(lines, "c1")?.records.decision).toMatchObject({ decision: "allow" });
    expect(formatWouldFlips(lines, "c1")).toBe("would flip: under the warn candidate (LeviathPolicy generation 7): allow -> deny (permission allow (default), taint_disabled -> permission-denied)\n");
    expect(formatWouldFlips(lines, "c2")).toBe("");
  });
});
