import { describe, expect, it } from "vitest";
import { describeTool } from "../runtime/reference/builtin-tools.ts";
import { extractTarget } from "../policy/targets.ts";
import type { Enforcement } from "../sidecar/core/enforcement.ts";
import type { RunStage } from "../sidecar/executors/shell.ts";
import { listStageTools } from "../sidecar/mcp/tool-catalog.ts";
import {
  BUILTIN_TOOL_LIST, BUILTIN_TOOL_SPELLINGS, describeBuiltinTool, findBuiltinTool, listBuiltinToolSpecs, RESULT_TOOL,
  type ToolClassification,
} from "./tools.ts";

const row = (names: string, sensitivity: string, direction: string, clearance: string) =>
  [names.split(" "), { sensitivity, direction, clearance } as ToolClassification] as const;

/** The built-in table of the taint-gate spec, §2.1, as written there. */
const SPEC_CLASSIFICATIONS = [
  row("shell bash", "public", "outbound", "public"),
  row("web_search web_fetch http_get http_post fetch", "public", "outbound", "public"),
  row("submit_output", "public", "outbound", "public"),
  row("read_file read_files list_dir", "internal", "inbound", "public"),
  row("write_file install_tool edit_file edit_document", "internal", "internal", "public"),
  row("context_write context_append context_read context_delete context_list todo_add todo_done todo_note", "internal", "internal", "public"),
  row("current_time locale_info", "public", "inbound", "public"),
  row("system_info environment_info which_command runtime_info", "internal", "inbound", "public"),
  row("ask_user_text ask_user_choice ask_user_confirm present_for_review", "internal", "internal", "public"),
  row("spawn_agent check_agent wait_for_agent send_to_agent kill_agent fan_out", "internal", "internal", "public"),
];

/** The built-in permission defaults of the taint-gate spec, §5.1, as written there. */
const SPEC_ALLOW = (
  "read_file read_files list_dir context_write context_append context_read context_delete context_list todo_add todo_done " +
  "todo_note current_time system_info locale_info environment_info which_command runtime_info spawn_agent check_agent " +
  "wait_for_agent send_to_agent kill_agent ask_user_text ask_user_choice ask_user_confirm edit_document"
).split(" ");
const SPEC_ASK = "write_file edit_file shell present_for_review install_tool web_search web_fetch".split(" ");
/** Upstream applies these inline and never asks (the spec's "everything else" is ask): allow keeps that. */
const ALLOWED_AS_APPLIED_INLINE = ["submit_output", "fan_out"];

describe("the built-in tool registry", () => {
  it("spells every tool once: canonical names and aliases never collide", () => {
    const spellings = BUILTIN_TOOL_LIST.flatMap((e) => [e.name, ...(e.aliases ?? [])]);
    expect(new Set(spellings).size).toBe(spellings.length);
    expect(BUILTIN_TOOL_SPELLINGS).toEqual(spellings);
    for (const s of spellings) expect(s, s).toMatch(/^[a-z][a-z_]*$/);
    // An MCP tool is always `server__tool`: a built-in name must never look like one.
    for (const s of spellings) expect(s, s).not.toContain("__");
  });

  it("finds an entry under each of its spellings, and nothing else", () => {
    expect(findBuiltinTool("bash")?.name).toBe("shell");
    expect(findBuiltinTool("Shell")).toBeUndefined();
    expect(findBuiltinTool("server__tool")).toBeUndefined();
    for (const e of BUILTIN_TOOL_LIST) for (const s of [e.name, ...(e.aliases ?? [])]) expect(findBuiltinTool(s)).toBe(e);
  });

  it("classifies every tool as the spec's §2.1 table does, and lists every tool of that table", () => {
    const specNames = SPEC_CLASSIFICATIONS.flatMap(([names]) => names);
    expect([...BUILTIN_TOOL_SPELLINGS].sort()).toEqual([...specNames].sort());
    for (const [names, c] of SPEC_CLASSIFICATIONS) for (const name of names) expect(findBuiltinTool(name)?.classification, name).toEqual(c);
  });

  it("defaults every permission as the spec's §5.1 table does", () => {
    const allowed = BUILTIN_TOOL_LIST.filter((e) => e.permission === "allow").map((e) => e.name);
    expect(allowed.sort()).toEqual([...SPEC_ALLOW, ...ALLOWED_AS_APPLIED_INLINE].sort());
    for (const name of SPEC_ASK) expect(findBuiltinTool(name)?.permission, name).toBe("ask");
  });

  it("names submit_output as the result tool, settled by the sidecar", () => {
    expect(RESULT_TOOL).toBe("submit_output");
    expect(findBuiltinTool(RESULT_TOOL)?.executor).toBe("result");
  });

  it("gives a target rule each built-in follows", () => {
    const url = { url: "https://Example.com/a", to: "a@b.c" };
    for (const e of BUILTIN_TOOL_LIST) {
      const expected = e.target === "url_host" ? "example.com" : e.target === "none" ? undefined : "a@b.c";
      for (const s of [e.name, ...(e.aliases ?? [])]) expect(extractTarget(s, url), s).toBe(expected);
    }
  });

  it("keeps metric classes and annotations consistent with executor and classification", () => {
    for (const e of BUILTIN_TOOL_LIST) {
      if (e.metricClass?.startsWith("file_") === true) expect(e.executor, e.name).toBe("file");
      if (e.executor === "runtime") continue;
      expect(e.annotations.openWorldHint, e.name).toBe(e.classification.direction === "outbound");
      expect(e.annotations.readOnlyHint, e.name).toBe(e.classification.direction === "inbound");
    }
  });
});

describe("what the model is told about the built-ins", () => {
  const sidecarTools = BUILTIN_TOOL_LIST.filter((e) => e.executor !== "runtime");
  const everySpelling = sidecarTools.flatMap((e) => [e.name, ...(e.aliases ?? [])]);

  it("has a spec for each tool the sidecar settles and none for the runtime's own", () => {
    expect(listBuiltinToolSpecs().map((s) => s.name)).toEqual(sidecarTools.map((e) => e.name));
    for (const e of BUILTIN_TOOL_LIST) expect(describeBuiltinTool(e.name) === undefined, e.name).toBe(e.executor === "runtime");
    expect(describeBuiltinTool("bash")?.name).toBe("bash");
  });

  it("is the same over MCP's tools/list and in the runtime's list, for every spelling", () => {
    const stage = { name: "s", availableTools: everySpelling } as unknown as RunStage;
    const mcp = listStageTools({ offeredTools: new Set(), runPolicy: {} } as unknown as Enforcement, stage);
    // web_search only where the policy names its backend (test/cli/sidecar-web-search.test.ts offers it).
    expect(mcp.map((t) => t.name).sort()).toEqual(everySpelling.filter((n) => n !== "web_search").sort());
    for (const listed of mcp) {
      const spec = describeBuiltinTool(listed.name)!;
      expect(listed).toEqual({ name: spec.name, description: spec.description, inputSchema: spec.inputSchema, annotations: spec.annotations });
      expect(describeTool(listed.name)).toEqual({ name: listed.name, description: listed.description, inputSchema: listed.inputSchema });
    }
  });

  it("derives each JSON Schema from the arguments the sidecar checks", () => {
    const schema = describeBuiltinTool("list_dir")!.inputSchema;
    expect(schema).toMatchObject({ type: "object", properties: { path: { type: "string", default: "." } } });
    expect(schema["required"]).toBeUndefined();
    expect(describeBuiltinTool("read_files")!.inputSchema).toMatchObject({ properties: { paths: { minItems: 1, maxItems: 256 } }, required: ["paths"] });
  });
});
