import { describe, expect, it } from "vitest";
import {
  BUILTIN_CLASSIFICATIONS,
  UNKNOWN_TOOL_CLASSIFICATION,
  applyClassificationOverride,
  buildResultLabelTable,
  classifyBuiltinTool,
  lookupResultLabel,
  parseClassificationOverride,
  parseDirection,
  resolveToolClassification,
} from "./classification.ts";
import type { ClassificationOverride } from "./classification.ts";

const noPolicy = { overrides: new Map<string, ClassificationOverride>(), sessionRaises: new Set<string>() };

describe("built-in classification (newer table, exact names)", () => {
  it.each([
    ["shell", "public", "outbound", "public"],
    ["bash", "public", "outbound", "public"],
    ["web_search", "public", "outbound", "public"],
    ["web_fetch", "public", "outbound", "public"],
    ["http_get", "public", "outbound", "public"],
    ["http_post", "public", "outbound", "public"],
    ["fetch", "public", "outbound", "public"],
    ["submit_output", "public", "outbound", "public"],
    ["read_file", "internal", "inbound", "public"],
    ["read_files", "internal", "inbound", "public"],
    ["list_dir", "internal", "inbound", "public"],
    ["write_file", "internal", "internal", "public"],
    ["install_tool", "internal", "internal", "public"],
    ["edit_file", "internal", "internal", "public"],
    ["edit_document", "internal", "internal", "public"],
    ["context_write", "internal", "internal", "public"],
    ["context_append", "internal", "internal", "public"],
    ["context_read", "internal", "internal", "public"],
    ["context_delete", "internal", "internal", "public"],
    ["context_list", "internal", "internal", "public"],
    ["todo_add", "internal", "internal", "public"],
    ["todo_done", "internal", "internal", "public"],
    ["todo_note", "internal", "internal", "public"],
    ["current_time", "public", "inbound", "public"],
    ["locale_info", "public", "inbound", "public"],
    ["system_info", "internal", "inbound", "public"],
    ["environment_info", "internal", "inbound", "public"],
    ["which_command", "internal", "inbound", "public"],
    ["runtime_info", "internal", "inbound", "public"],
    ["ask_user_text", "internal", "internal", "public"],
    ["ask_user_choice", "internal", "internal", "public"],
    ["ask_user_confirm", "internal", "internal", "public"],
    ["present_for_review", "internal", "internal", "public"],
    ["spawn_agent", "internal", "internal", "public"],
    ["check_agent", "internal", "internal", "public"],
    ["wait_for_agent", "internal", "internal", "public"],
    ["send_to_agent", "internal", "internal", "public"],
    ["kill_agent", "internal", "internal", "public"],
    ["fan_out", "internal", "internal", "public"],
  ] as const)("%s is %s/%s/%s", (tool, sensitivity, direction, clearance) => {
    expect(classifyBuiltinTool(tool)).toEqual({ sensitivity, direction, clearance });
  });

  it("has exactly the 39 names of the table", () => {
    expect(BUILTIN_CLASSIFICATIONS.size).toBe(39);
  });

  it.each(["github__create_issue", "my_script_tool", "Shell", "READ_FILE", "send_email", ""])(
    "unknown %j fails closed as public/outbound/public",
    (tool) => {
      expect(classifyBuiltinTool(tool)).toEqual(UNKNOWN_TOOL_CLASSIFICATION);
      expect(UNKNOWN_TOOL_CLASSIFICATION).toEqual({ sensitivity: "public", direction: "outbound", clearance: "public" });
    },
  );
});

describe("overrides", () => {
  it("replaces only the set fields", () => {
    const got = applyClassificationOverride("tracker__read", UNKNOWN_TOOL_CLASSIFICATION, { sensitivity: "private" });
    expect(got.classification).toEqual({ sensitivity: "private", direction: "outbound", clearance: "public" });
    expect(got.warnings).toEqual([]);
  });

  it("accepts a direction case-insensitively", () => {
    expect(parseDirection("Inbound")).toBe("inbound");
    const got = applyClassificationOverride("x", UNKNOWN_TOOL_CLASSIFICATION, { direction: "INTERNAL" });
    expect(got.classification.direction).toBe("internal");
  });

  it("ignores an unrecognised direction with a warning and keeps the old one", () => {
    const got = applyClassificationOverride("srv__send_email", UNKNOWN_TOOL_CLASSIFICATION, {
      sensitivity: "private", direction: "egress", clearance: "internal",
    });
    expect(got.classification).toEqual({ sensitivity: "private", direction: "outbound", clearance: "internal" });
    expect(got.warnings).toHaveLength(1);
    expect(got.warnings[0]!.tool).toBe("srv__send_email");
    expect(got.warnings[0]!.message).toContain("'egress'");
  });

  it("flat form can name a built-in: shell cleared for private", () => {
    const overrides = new Map([["shell", { clearance: "private" } as const]]);
    const got = resolveToolClassification("shell", { overrides, sessionRaises: new Set() });
    expect(got.classification).toEqual({ sensitivity: "public", direction: "outbound", clearance: "private" });
    // exact name only: the override for shell does not touch bash
    expect(resolveToolClassification("bash", { overrides, sessionRaises: new Set() }).classification.clearance).toBe("public");
  });

  it("parses raw fields; an unreadable level stays unset, never defaulted", () => {
    const got = parseClassificationOverride("t", { sensitivity: "secret", clearance: "Internal", direction: "egress" });
    expect(got.override).toEqual({ clearance: "internal", direction: "egress" });
    expect(got.warnings.map((w) => w.message)).toEqual(["[mcp_overrides] t: unreadable sensitivity 'secret' ignored"]);
  });
});

describe("session raise", () => {
  it("sets that exact tool's clearance to private, keeping the other fields", () => {
    const got = resolveToolClassification("shell", { overrides: new Map(), sessionRaises: new Set(["shell"]) });
    expect(got.classification).toEqual({ sensitivity: "public", direction: "outbound", clearance: "private" });
    expect(resolveToolClassification("web_fetch", { overrides: new Map(), sessionRaises: new Set(["shell"]) }).classification.clearance).toBe("public");
  });

  it("wins over an overridden clearance and keeps the overridden sensitivity", () => {
    const overrides = new Map([["srv__t", { sensitivity: "internal", clearance: "public" } as const]]);
    const got = resolveToolClassification("srv__t", { overrides, sessionRaises: new Set(["srv__t"]) });
    expect(got.classification).toEqual({ sensitivity: "internal", direction: "outbound", clearance: "private" });
  });

  it("no raise, no override: the built-in", () => {
    expect(resolveToolClassification("read_file", noPolicy).classification).toEqual(classifyBuiltinTool("read_file"));
  });
});

describe("result labels", () => {
  const tools = ["read_file", "read_files", "list_dir", "shell", "write_file", "srv__lookup"];

  it("labels each offered tool with its sensitivity; a missing name is public", () => {
    const table = buildResultLabelTable({ tools, overrides: new Map(), taintTracking: true, readGrantActive: false });
    expect(lookupResultLabel(table, "read_file")).toBe("internal");
    expect(lookupResultLabel(table, "shell")).toBe("public");
    expect(lookupResultLabel(table, "srv__lookup")).toBe("public");
    expect(lookupResultLabel(table, "context_read")).toBe("public");
  });

  it("an override changes the label", () => {
    const overrides = new Map([["srv__lookup", { sensitivity: "private" } as const]]);
    const table = buildResultLabelTable({ tools, overrides, taintTracking: true, readGrantActive: false });
    expect(lookupResultLabel(table, "srv__lookup")).toBe("private");
  });

  it("an active grant raises the three read tools to private (only when offered)", () => {
    const table = buildResultLabelTable({ tools: ["read_file", "shell"], overrides: new Map(), taintTracking: true, readGrantActive: true });
    expect(lookupResultLabel(table, "read_file")).toBe("private");
    expect(lookupResultLabel(table, "shell")).toBe("public");
    expect(table.has("list_dir")).toBe(false);
    const all = buildResultLabelTable({ tools, overrides: new Map(), taintTracking: true, readGrantActive: true });
    expect(["read_file", "read_files", "list_dir"].map((t) => lookupResultLabel(all, t))).toEqual(["private", "private", "private"]);
    expect(lookupResultLabel(all, "write_file")).toBe("internal");
  });

  it("tracking off: no table, everything public", () => {
    const table = buildResultLabelTable({ tools, overrides: new Map(), taintTracking: false, readGrantActive: true });
    expect(table.size).toBe(0);
    expect(lookupResultLabel(table, "read_file")).toBe("public");
  });
});
