// docs/runtimes.md against the code it describes: its Agent and LeviathPolicy examples against the schemas and the
// ceiling (and the refusal it quotes), its kinds against the adapters `leviath adapter` has, each client's settings
// against the launch its adapter builds (the codex and openai-agents blocks are the adapters' output for one
// context, so the page cannot describe a setting the code no longer makes), and the image recipes against the
// install the tests run (the same npm arguments and pinned versions).
import { existsSync, readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { AgentSpecSchema } from "../../src/api/agent.ts";
import { EMPTY_POLICY, LeviathPolicySpecSchema } from "../../src/api/leviath-policy.ts";
import { decideRuntimeCeilings } from "../../src/policy/ceilings.ts";
import { RUNTIME_ADAPTERS } from "../../src/runtime/adapters/adapters.ts";
import { buildClaudeCodeLaunch } from "../../src/runtime/adapters/claude-code.ts";
import { RuntimeTemplateSchema, TEMPLATE_PLACEHOLDERS } from "../../src/api/runtime-templates.ts";
import { MCP_COMMAND_SERVER } from "../../src/runtime/adapters/mcp-command.ts";
import { buildCodexConfig, buildCodexModelCatalog, CODEX_VERSION, launchCodex } from "../../src/runtime/adapters/codex.ts";
import { buildMcpServersConfig, type LaunchContext } from "../../src/runtime/adapters/launch.ts";
import { launchOpenAiAgents, OPENAI_AGENTS_API_ENV, OPENAI_AGENTS_INSTRUCTIONS_ENV, OPENAI_AGENTS_VERSION } from "../../src/runtime/adapters/openai-agents.ts";
import { buildInstallArgs, CLAUDE_CODE, CODEX, OPENAI_AGENTS } from "../clients/install-client.ts";
import { buildRecipeBudArgs } from "../e2e/harness/client-recipes.ts";
import { readMcpCommandRecipe } from "./mcp-command-recipe.ts";
import { repo } from "./run-cli.ts";

const doc = readFileSync(repo("docs/runtimes.md"), "utf8");
const blocks = (lang: string) => [...doc.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!);
const objects = blocks("yaml").flatMap((y) => parseAllDocuments(y).map((d) => d.toJS() as { kind: string; spec: unknown }));
const section = (title: string) => doc.slice(doc.indexOf(title), doc.indexOf("\n### ", doc.indexOf(title) + 1));

describe("docs/runtimes.md", () => {
  it("names every kind `leviath adapter` has an adapter for, started by it", () => {
    for (const kind of Object.keys(RUNTIME_ADAPTERS)) expect(doc).toMatch(new RegExp(`\\n\\| \`${kind}\` \\|[^\\n]*\\| \`leviath adapter ${kind}\` \\|\\n`));
  });

  it("has an Agent of kind claude-code that its LeviathPolicy allows, and quotes the refusal without it", () => {
    const policy = LeviathPolicySpecSchema.parse(objects.find((o) => o.kind === "LeviathPolicy")!.spec);
    const agent = AgentSpecSchema.parse(objects.find((o) => o.kind === "Agent")!.spec);
    expect(agent.runtime?.kind).toBe("claude-code");
    expect(decideRuntimeCeilings(policy, agent, "ghcr.io/leviath/leviath-agent:0.1.0")).toBeUndefined();
    const refused = decideRuntimeCeilings(EMPTY_POLICY, agent, undefined);
    expect(blocks("text")).toContain(`${refused!.message}\n`);
  });

  it("lists every argument and variable the claude-code launch sets, and nothing it does not", () => {
    const passedOn = ["PATH", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "NODE_EXTRA_CA_CERTS", "LANG", "TZ"];
    const launch = buildClaudeCodeLaunch({
      sidecarUrl: "http://127.0.0.1:7777", token: "t", home: "/tmp", workdir: "/workspace", task: "x", instructions: "i", model: "m", providerBaseUrl: "https://gw", toolTimeoutSeconds: 60,
      env: Object.fromEntries(passedOn.map((k) => [k, "set"])),
    });
    const rows = section("### The settings").split("\n").filter((l) => l.startsWith("| `")).map((l) => l.split("|")[1]!);
    const named = rows.flatMap((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
    expect(named.filter((n) => n.startsWith("-")).sort()).toEqual(launch.args.filter((a) => a.startsWith("-")).sort());
    expect(named.filter((n) => !n.startsWith("-")).sort()).toEqual(Object.keys(launch.env).sort());
  });

  // Each client's recipe: the page's Dockerfile block is its images/<kind>/Containerfile's, with the npm install the
  // tests run, at the version they pin and scripts/build-images builds; the page names the cache and the build.
  const images = [{ client: CLAUDE_CODE, variable: "CLAUDE_CODE_VERSION" }, { client: CODEX, variable: "CODEX_VERSION" }, { client: OPENAI_AGENTS, variable: "OPENAI_AGENTS_VERSION" }];
  it.each(images)("builds the $client.name image with the install the tests run, at the version they pin", ({ client, variable }) => {
    const containerfile = readFileSync(repo(`images/${client.name}/Containerfile`), "utf8");
    const recipe = blocks("dockerfile").find((b) => b.includes(`${client.pkg}@`)) ?? "";
    expect(containerfile).toContain(recipe);
    expect(recipe).toContain(`RUN npm ${buildInstallArgs(client, `/opt/${client.name}`).join(" ")} `);
    expect(recipe).toContain(`ENTRYPOINT ["leviath", "adapter", "${client.name}"]`);
    expect(readFileSync(repo("scripts/build-images"), "utf8")).toContain(`\n${variable}=${client.version}\n`);
    expect(doc).toContain(`~/.cache/leviath/clients/${client.name}-${client.version}`);
    expect(doc).toContain(`buildah bud -f images/${client.name}/Containerfile -t registry.internal/agents/${client.name}:${client.version} images/${client.name}\n`);
  });

  it("shows the buildah bud that test/e2e/client-recipes.test.ts runs on a recipe", () => {
    const bases = { runtime: "leviath.local/leviath-agent:TAG", node: "leviath.local/leviath-node:TAG" };
    expect(section("### The recipes, built as a team builds them")).toContain(`\`\`\`sh\nbuildah ${buildRecipeBudArgs(CLAUDE_CODE.name, bases).join(" ")}\n\`\`\``);
  });
});

const codexPart = doc.slice(doc.indexOf("## Codex (`codex`)"), doc.indexOf("## The OpenAI Agents SDK (`openai-agents`)"));
const agentsPart = doc.slice(doc.indexOf("## The OpenAI Agents SDK (`openai-agents`)"), doc.indexOf("## How Codex and the Agents SDK program are tested"));
const block = (part: string, lang: string, n = 0): string => [...part.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))][n]?.[1] ?? "";
const ctx: LaunchContext = {
  sidecarUrl: "http://127.0.0.1:8181", token: "runtime-token", home: "/tmp", workdir: "/workspace", task: "Task: Summarise notes.md.",
  model: "gpt-5.5", providerBaseUrl: "https://api.openai.com/v1", toolTimeoutSeconds: 330, env: { PATH: "/usr/local/bin:/usr/bin:/bin", OPENAI_API_KEY: "key" },
};
const quoted = (args: readonly string[]) => args.map((a) => (/^[\w./=:-]+$/.test(a) ? a : `'${a}'`)).join(" ");

describe("docs/runtimes.md, codex", () => {
  const launch = launchCodex(ctx);
  it("shows the command line, config.toml and model catalog the adapter makes", () => {
    expect(block(codexPart, "sh").trim()).toBe(`${launch.command} ${quoted(launch.args)}`);
    expect(block(codexPart, "toml")).toBe(buildCodexConfig(ctx));
    expect(block(codexPart, "json")).toBe(buildCodexModelCatalog("gpt-5.5"));
    expect(launch.files.map((f) => f.content)).toEqual([buildCodexConfig(ctx), buildCodexModelCatalog("gpt-5.5"), ""]);
  });

  it("explains every setting, flag and variable (the stage's instructions too, set only when it has any)", () => {
    // Each key is named in the page, or (a key of a table the page explains as a whole) its table is.
    let table = "";
    const undocumented = buildCodexConfig({ ...ctx, instructions: "Survey." }).split("\n").flatMap((l) => {
      table = /^\[([a-z_.]+)\]$/.exec(l)?.[1] ?? table;
      const key = /^([a-z_]+) = /.exec(l)?.[1];
      return key === undefined || codexPart.includes(`\`${key}`) || codexPart.includes(`\`[${table}]`) ? [] : [`${table}.${key}`];
    });
    expect(undocumented).toEqual([]);
    for (const flag of launch.args.filter((a) => a.startsWith("--"))) expect(codexPart).toContain(`| \`${flag}`);
    for (const name of Object.keys(launch.env)) expect(codexPart).toContain(`| \`${name}\` |`);
  });

  it("pins the version the adapter was checked against in its image recipe", () => {
    expect(block(codexPart, "dockerfile")).toContain(`@openai/codex@${CODEX_VERSION}`);
    expect(codexPart).toContain(`settings checked against ${CODEX_VERSION}`);
  });
});

describe("docs/runtimes.md, openai-agents", () => {
  const launch = launchOpenAiAgents({ ...ctx, token: "the runtime token" });
  it("lists every variable the adapter sets, with its value", () => {
    expect(agentsPart).toContain(`\`${launch.command} ${quoted(launch.args)}\``);
    for (const [name, value] of Object.entries(launch.env)) {
      const row = agentsPart.split("\n").find((l) => l.startsWith(`| \`${name}\` |`));
      expect(row, name).toBeDefined();
      if (!["PATH", "HOME", "LEVIATH_SIDECAR_TOKEN", "OPENAI_API_KEY"].includes(name)) expect(row).toContain(`\`${value}\``);
    }
    expect(agentsPart).toContain(`| \`${OPENAI_AGENTS_API_ENV}\` |`);
    expect(agentsPart).toContain(`| \`${OPENAI_AGENTS_INSTRUCTIONS_ENV}\` |`);
  });

  it("builds its image from the program in the repo and the pinned SDK", () => {
    const recipe = block(agentsPart, "dockerfile");
    expect(recipe).toContain(`@openai/agents@${OPENAI_AGENTS_VERSION}`);
    const copied = /^COPY (images\/\S+) /m.exec(recipe)?.[1] ?? "";
    expect(existsSync(repo(copied))).toBe(true);
    expect(recipe).toContain(`bin/${launch.command}`);
  });
});

describe("docs/runtimes.md, stages", () => {
  const start = doc.indexOf("## Stages");
  const part = doc.slice(start, doc.indexOf("\n## ", start));
  it("names the tests that run each client through two stages and every row of the table, and they exist", () => {
    const named = [...part.matchAll(/(?:test|src)\/[\w/-]+\.test\.ts/g)].map((m) => m[0]);
    expect(new Set(named)).toEqual(new Set(["test/cli/runtime-stages.test.ts", "src/runtime/adapters/stage-steps.test.ts"]));
    for (const file of named) expect(existsSync(repo(file)), file).toBe(true);
    const stagesTest = readFileSync(repo("test/cli/runtime-stages.test.ts"), "utf8");
    for (const kind of Object.keys(RUNTIME_ADAPTERS)) expect(stagesTest).toContain(`kind: "${kind}"`);
  });
});

describe("docs/runtimes.md, approvals and client timeouts", () => {
  const part = doc.slice(doc.indexOf("## Approvals and client timeouts"));
  // The adapter's tool timeout for the default interaction timeout of 3600 s (src/cli/adapter.ts adds 60 s).
  const at = { ...ctx, toolTimeoutSeconds: 3660 };
  const row = (client: string) => part.split("\n").find((l) => l.startsWith(`| ${client} |`)) ?? "";

  it("quotes each client's tool timeout as its adapter sets it for the default interaction timeout", () => {
    expect(row("Claude Code")).toContain(`\`${buildClaudeCodeLaunch(at).env["MCP_TOOL_TIMEOUT"]}\``);
    expect(row("Codex")).toContain(`\`${/^tool_timeout_sec = (\d+)$/m.exec(buildCodexConfig(at))?.[1]}\``);
    expect(row("Agents SDK program")).toContain(`\`${launchOpenAiAgents(at).env["LEVIATH_MCP_TIMEOUT_MS"]}\``);
  });

  it("names the tests that prove it, and they exist", () => {
    const named = [...part.matchAll(/test\/cli\/approval-wait[\w-]*\.(?:test\.)?ts/g)].map((m) => m[0]);
    expect(new Set(named)).toEqual(new Set(["test/cli/approval-wait-claude-code.test.ts", "test/cli/approval-wait-codex.test.ts", "test/cli/approval-wait-openai-agents.test.ts", "test/cli/approval-wait.ts"]));
    for (const file of named) expect(existsSync(repo(file)), file).toBe(true);
  });
});

describe("docs/runtimes.md, mcp-command", () => {
  const start = doc.indexOf("## Any MCP client under the admin's template");
  const part = doc.slice(start, doc.indexOf("\n## ", start + 1));
  const recipe = readMcpCommandRecipe();
  const rows = (header: string) => part.slice(part.indexOf(header)).split("\n\n")[0]!.split("\n").slice(2).map((l) => l.split("|")[1]!.trim());

  it("has an Agent naming a template its LeviathPolicy declares, and quotes the refusal without it", () => {
    expect(recipe.agent.runtime).toEqual({ kind: "mcp-command", template: "claude-print" });
    expect(decideRuntimeCeilings(recipe.policy, recipe.agent, undefined)).toBeUndefined();
    const refused = decideRuntimeCeilings({ ...recipe.policy, runtimeTemplates: [] }, recipe.agent, undefined);
    expect(part).toContain(`\n${refused!.message}\n`);
  });

  it("describes every field of a template and every placeholder, and nothing else", () => {
    expect(rows("| Field |")).toEqual(Object.keys(RuntimeTemplateSchema.shape).map((k) => `\`${k}\``));
    expect(rows("| Placeholder |").flatMap((r) => r.split(", ")).sort()).toEqual(Object.keys(TEMPLATE_PLACEHOLDERS).map((p) => `\`{${p}}\``).sort());
  });

  it("shows the {mcp_config} file the adapter writes", () => {
    const shown = /```json\n([\s\S]*?)```/.exec(part)![1]!;
    expect(shown).toBe(buildMcpServersConfig({ sidecarUrl: "http://127.0.0.1:7777", token: "<the runtime token>" }, MCP_COMMAND_SERVER));
  });

  it("names the tests that prove it, and they exist", () => {
    const named = [...part.matchAll(/test\/[\w/-]+\.test\.ts/g)].map((m) => m[0]);
    expect(new Set(named)).toEqual(new Set(["test/cli/runtime-mcp-command.test.ts", "test/cli/runtime-stages.test.ts", "test/integration/controller/ceilings.test.ts"]));
    for (const file of named) expect(existsSync(repo(file)), file).toBe(true);
    expect(readFileSync(repo("test/cli/runtime-stages.test.ts"), "utf8")).toContain('kind: "mcp-command"');
  });
});
