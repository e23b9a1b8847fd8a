import { describe, expect, it } from "vitest";
import { buildMcpToolName, buildOverrideTable, sanitizeToolName } from "./mcp-overrides.ts";

describe("sanitizeToolName", () => {
  it.each([
    ["create_issue", "create_issue"],
    ["find-all", "find-all"],
    ["my.tools", "my_tools"],
    ["weird name!/#", "weird_name___"],
    ["!!!", "___"],
    ["", "tool"],
    ["é😀", "__"],
  ])("%j -> %j", (name, want) => {
    expect(sanitizeToolName(name)).toBe(want);
  });

  it("cuts to 64 bytes", () => {
    expect(sanitizeToolName("a".repeat(100))).toHaveLength(64);
  });
});

describe("buildMcpToolName", () => {
  it("joins with two underscores and sanitises both halves", () => {
    expect(buildMcpToolName("tracker", "create_issue")).toBe("tracker__create_issue");
    expect(buildMcpToolName("my.tools", "find.all")).toBe("my_tools__find_all");
  });

  it("truncates after joining, so the tool name is what gets cut", () => {
    const server = "s".repeat(60);
    const name = buildMcpToolName(server, "create_issue");
    expect(name).toHaveLength(64);
    expect(name.startsWith(server)).toBe(true);
    expect(name.endsWith("__cr")).toBe(true);
  });
});

describe("buildOverrideTable", () => {
  it("nested form keys by the dispatched server__tool name", () => {
    const got = buildOverrideTable({
      "my-server": { tools: { read_customer_data: { sensitivity: "private" }, "search.docs": { sensitivity: "public" } } },
    });
    expect([...got.table.keys()]).toEqual(["my-server__read_customer_data", "my-server__search_docs"]);
    expect(got.table.get("my-server__read_customer_data")).toEqual({ sensitivity: "private" });
  });

  it("flat form uses the key verbatim, including a built-in name", () => {
    const got = buildOverrideTable({ shell: { clearance: "private" }, "srv__send_email": { direction: "egress" } });
    expect(got.table.get("shell")).toEqual({ clearance: "private" });
    expect(got.table.get("srv__send_email")).toEqual({ direction: "egress" });
  });

  it("drops an entry with neither a tools table nor a field", () => {
    expect(buildOverrideTable({ empty: {} }).table.size).toBe(0);
  });

  it("reports unreadable levels and leaves them unset", () => {
    const got = buildOverrideTable({ shell: { clearance: "top-secret" } });
    expect(got.table.get("shell")).toEqual({});
    expect(got.warnings).toHaveLength(1);
  });
});
