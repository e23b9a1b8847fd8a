import { describe, expect, it } from "vitest";
import {
  buildLaunchOverrides,
  buildPermissionDeniedMessage,
  buildUserDeclinedMessage,
  canonicalToolName,
  defaultPermission,
  lookupPermission,
  parsePermission,
  resolveToolPermission,
  stricterPermission,
  toolSpellings,
} from "./permissions.ts";
import type { PermissionInputs } from "./permissions.ts";

const resolve = (inputs: PermissionInputs) => resolveToolPermission(inputs).permission;

describe("values, aliases and defaults", () => {
  it("accepts exactly allow, ask, deny", () => {
    expect(["allow", "ask", "deny", "Allow", "yes", ""].map(parsePermission)).toEqual(["allow", "ask", "deny", undefined, undefined, undefined]);
  });

  it("folds bash to shell and lists every spelling, the called one first", () => {
    expect(canonicalToolName("bash")).toBe("shell");
    expect(canonicalToolName("shell")).toBe("shell");
    expect(toolSpellings("bash")).toEqual(["bash", "shell"]);
    expect(toolSpellings("shell")).toEqual(["shell", "bash"]);
    expect(toolSpellings("web_fetch")).toEqual(["web_fetch"]);
  });

  it("looks a tool up under any spelling", () => {
    expect(lookupPermission({ bash: "deny" }, "shell")).toBe("deny");
    expect(lookupPermission({ shell: "allow" }, "bash")).toBe("allow");
    expect(lookupPermission({ shell: "allow", bash: "deny" }, "bash")).toBe("deny");
    expect(lookupPermission({}, "shell")).toBeUndefined();
    expect(lookupPermission(undefined, "shell")).toBeUndefined();
  });

  it.each([
    ["read_file", "allow"], ["read_files", "allow"], ["list_dir", "allow"],
    ["context_write", "allow"], ["context_delete", "allow"], ["todo_note", "allow"],
    ["current_time", "allow"], ["system_info", "allow"], ["runtime_info", "allow"], ["which_command", "allow"],
    ["spawn_agent", "allow"], ["kill_agent", "allow"], ["ask_user_text", "allow"], ["edit_document", "allow"],
    ["submit_output", "allow"], ["fan_out", "allow"],
    ["write_file", "ask"], ["edit_file", "ask"], ["shell", "ask"], ["bash", "ask"],
    ["present_for_review", "ask"], ["install_tool", "ask"], ["web_search", "ask"], ["web_fetch", "ask"],
    ["github__create_issue", "ask"], ["my_script", "ask"],
  ] as const)("default for %s is %s", (tool, want) => {
    expect(defaultPermission(tool)).toBe(want);
    expect(resolve({ tool })).toBe(want);
  });

  it("orders allow < ask < deny", () => {
    expect(stricterPermission("allow", "ask")).toBe("ask");
    expect(stricterPermission("deny", "ask")).toBe("deny");
    expect(stricterPermission("allow", "allow")).toBe("allow");
  });
});

describe("tighten-only resolution (§5.2)", () => {
  it.each<[string, PermissionInputs, string]>([
    // blueprint = stage entry else agent entry
    ["stage beats agent (tighter stage)", { tool: "write_file", allowBlueprintPermissions: true, blueprintStage: { write_file: "deny" }, blueprintAgent: { write_file: "allow" } }, "deny"],
    ["stage beats agent (looser stage)", { tool: "write_file", allowBlueprintPermissions: true, blueprintStage: { write_file: "allow" }, blueprintAgent: { write_file: "deny" } }, "allow"],
    ["agent entry when the stage has none", { tool: "read_file", blueprintStage: { shell: "deny" }, blueprintAgent: { read_file: "deny" } }, "deny"],
    // the user ceiling clamps
    ["ceiling clamps a looser blueprint", { tool: "shell", userPermissions: { shell: "ask" }, blueprintAgent: { shell: "allow" } }, "ask"],
    ["blueprint tightens under the ceiling", { tool: "shell", userPermissions: { shell: "allow" }, blueprintStage: { shell: "deny" } }, "deny"],
    ["ceiling deny beats blueprint allow", { tool: "read_file", userPermissions: { read_file: "deny" }, blueprintAgent: { read_file: "allow" } }, "deny"],
    ["ceiling alone", { tool: "write_file", userPermissions: { write_file: "allow" } }, "allow"],
    ["ceiling clamps even with allow_blueprint_permissions", { tool: "shell", allowBlueprintPermissions: true, userPermissions: { shell: "ask" }, blueprintAgent: { shell: "allow" } }, "ask"],
    // no ceiling: the default is the floor
    ["blueprint cannot loosen the default", { tool: "shell", blueprintAgent: { shell: "allow" } }, "ask"],
    ["blueprint cannot loosen an unknown tool", { tool: "srv__x", blueprintAgent: { srv__x: "allow" } }, "ask"],
    ["blueprint may tighten the default", { tool: "read_file", blueprintAgent: { read_file: "ask" } }, "ask"],
    // the web_search / web_fetch exception
    ["blueprint may pre-allow web_search", { tool: "web_search", blueprintAgent: { web_search: "allow" } }, "allow"],
    ["blueprint may pre-allow web_fetch (stage)", { tool: "web_fetch", blueprintStage: { web_fetch: "allow" } }, "allow"],
    ["web_search exception yields to a user entry", { tool: "web_search", userPermissions: { web_search: "ask" }, blueprintAgent: { web_search: "allow" } }, "ask"],
    ["no exception for http_get", { tool: "http_get", blueprintAgent: { http_get: "allow" } }, "ask"],
    // allow_blueprint_permissions lifts the floor
    ["allow_blueprint_permissions lifts the floor", { tool: "shell", allowBlueprintPermissions: true, blueprintAgent: { shell: "allow" } }, "allow"],
    ["allow_blueprint_permissions keeps a blueprint deny", { tool: "read_file", allowBlueprintPermissions: true, blueprintAgent: { read_file: "deny" } }, "deny"],
    // per-agent user map overlaid key by key
    ["per-agent map replaces the global entry", { tool: "shell", userPermissions: { shell: "deny" }, agentUserPermissions: { shell: "allow" } }, "allow"],
    ["per-agent map leaves other keys", { tool: "write_file", userPermissions: { write_file: "deny" }, agentUserPermissions: { shell: "allow" } }, "deny"],
    ["per-agent entry is the ceiling", { tool: "shell", userPermissions: { shell: "allow" }, agentUserPermissions: { shell: "ask" }, blueprintAgent: { shell: "allow" } }, "ask"],
    // launch overrides
    ["--allow turns ask into allow", { tool: "shell", launch: { shell: "allow" } }, "allow"],
    ["--yolo turns ask into allow", { tool: "write_file", launch: { "*": "allow" } }, "allow"],
    ["--yolo never lifts a user deny", { tool: "shell", userPermissions: { shell: "deny" }, launch: { "*": "allow" } }, "deny"],
    ["--allow never lifts a blueprint deny", { tool: "shell", blueprintStage: { shell: "deny" }, launch: { shell: "allow" } }, "deny"],
    ["a specific launch entry beats the wildcard", { tool: "shell", launch: { "*": "allow", shell: "ask" } }, "ask"],
    ["launch replaces a configured ask from the ceiling", { tool: "shell", userPermissions: { shell: "ask" }, launch: { shell: "allow" } }, "allow"],
    // aliases both ways
    ["user bash entry governs a shell call", { tool: "shell", userPermissions: { bash: "deny" } }, "deny"],
    ["user shell entry governs a bash call", { tool: "bash", userPermissions: { shell: "deny" } }, "deny"],
    ["blueprint bash entry clamps a shell call", { tool: "shell", userPermissions: { shell: "allow" }, blueprintAgent: { bash: "ask" } }, "ask"],
    ["--allow bash allows a shell call", { tool: "shell", launch: { bash: "allow" } }, "allow"],
    ["--allow shell allows a bash call", { tool: "bash", launch: { shell: "allow" } }, "allow"],
    // deny applies to submit_output like any tool (deliberate improvement)
    ["submit_output deny from the user", { tool: "submit_output", userPermissions: { submit_output: "deny" } }, "deny"],
    ["submit_output deny from the blueprint", { tool: "submit_output", blueprintAgent: { submit_output: "deny" }, launch: { "*": "allow" } }, "deny"],
  ])("%s", (_name, inputs, want) => {
    expect(resolve(inputs)).toBe(want);
  });

  it("reports where the answer came from", () => {
    expect(resolveToolPermission({ tool: "shell" }).source).toBe("default");
    expect(resolveToolPermission({ tool: "shell", userPermissions: { shell: "allow" } }).source).toBe("ceiling");
    expect(resolveToolPermission({ tool: "shell", launch: { "*": "allow" } }).source).toBe("launch");
    expect(resolveToolPermission({ tool: "web_search", blueprintAgent: { web_search: "allow" } }).source).toBe("blueprint");
  });
});

describe("launch overrides and messages", () => {
  it("builds --yolo and --allow", () => {
    expect(buildLaunchOverrides({ yolo: true, allow: [] })).toEqual({ "*": "allow" });
    expect(buildLaunchOverrides({ yolo: false, allow: ["shell", "web_fetch"] })).toEqual({ shell: "allow", web_fetch: "allow" });
  });

  it("uses upstream's exact texts", () => {
    expect(buildPermissionDeniedMessage("shell")).toBe("[denied] Tool 'shell' is not permitted.");
    expect(buildUserDeclinedMessage("write_file")).toBe("[denied] User declined tool call 'write_file'.");
  });
});
