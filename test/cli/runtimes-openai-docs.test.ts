import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildCodexConfig, buildCodexModelCatalog, CODEX_VERSION, launchCodex } from "../../src/runtimes/codex.ts";
import type { LaunchContext } from "../../src/runtimes/launch.ts";
import { launchOpenAiAgents, OPENAI_AGENTS_API_ENV, OPENAI_AGENTS_VERSION } from "../../src/runtimes/openai-agents.ts";
import { repo } from "./run-cli.ts";

// docs/runtimes-openai.md shows what the codex and openai-agents adapters produce for one context: each block and
// table is checked against the adapters' own output, so the page cannot describe a setting the code no longer makes.
const doc = readFileSync(repo("docs/runtimes-openai.md"), "utf8");
const codexPart = doc.slice(doc.indexOf("## `codex`"), doc.indexOf("## `openai-agents`"));
const agentsPart = doc.slice(doc.indexOf("## `openai-agents`"), doc.indexOf("## Tested"));
const block = (part: string, lang: string, n = 0): string => [...part.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))][n]?.[1] ?? "";
const ctx: LaunchContext = {
  sidecarUrl: "http://127.0.0.1:8181", token: "runtime-token", home: "/tmp", workdir: "/workspace", task: "Summarise notes.md.",
  model: "gpt-5.5", providerBaseUrl: "https://api.openai.com/v1", toolTimeoutSeconds: 330, env: { PATH: "/usr/local/bin:/usr/bin:/bin", OPENAI_API_KEY: "key" },
};
const quoted = (args: readonly string[]) => args.map((a) => (/^[\w./=:-]+$/.test(a) ? a : `'${a}'`)).join(" ");

describe("docs/runtimes-openai.md, codex", () => {
  const launch = launchCodex(ctx);
  it("shows the command line, config.toml and model catalog the adapter makes", () => {
    expect(block(codexPart, "sh").trim()).toBe(`${launch.command} ${quoted(launch.args)}`);
    expect(block(codexPart, "toml")).toBe(buildCodexConfig(ctx));
    expect(block(codexPart, "json")).toBe(buildCodexModelCatalog("gpt-5.5"));
    expect(launch.files.map((f) => f.content)).toEqual([buildCodexConfig(ctx), buildCodexModelCatalog("gpt-5.5")]);
  });

  it("explains every setting, flag and variable", () => {
    // Each key is named in the page, or (a key of a table the page explains as a whole) its table is.
    let table = "";
    const undocumented = buildCodexConfig(ctx).split("\n").flatMap((l) => {
      table = /^\[([a-z_.]+)\]$/.exec(l)?.[1] ?? table;
      const key = /^([a-z_]+) = /.exec(l)?.[1];
      return key === undefined || codexPart.includes(`\`${key}`) || codexPart.includes(`\`[${table}]`) ? [] : [`${table}.${key}`];
    });
    expect(undocumented).toEqual([]);
    for (const flag of launch.args.filter((a) => a.startsWith("--"))) expect(codexPart).toContain(`| \`${flag}`);
    for (const name of Object.keys(launch.env)) expect(codexPart).toContain(`| \`${name}\` |`);
  });

  it("pins the version the adapter was checked against in its image recipe", () => {
    expect(block(codexPart, "Containerfile")).toContain(`@openai/codex@${CODEX_VERSION}`);
    expect(codexPart).toContain(`settings checked against ${CODEX_VERSION}`);
  });
});

describe("docs/runtimes-openai.md, openai-agents", () => {
  const launch = launchOpenAiAgents({ ...ctx, token: "the runtime token" });
  it("lists every variable the adapter sets, with its value", () => {
    expect(agentsPart).toContain(`\`${launch.command} ${quoted(launch.args)}\``);
    for (const [name, value] of Object.entries(launch.env)) {
      const row = agentsPart.split("\n").find((l) => l.startsWith(`| \`${name}\` |`));
      expect(row, name).toBeDefined();
      if (!["PATH", "HOME", "LEVIATH_SIDECAR_TOKEN", "OPENAI_API_KEY"].includes(name)) expect(row).toContain(`\`${value}\``);
    }
    expect(agentsPart).toContain(`| \`${OPENAI_AGENTS_API_ENV}\` |`);
  });

  it("builds its image from the program in the repo and the pinned SDK", () => {
    const recipe = block(agentsPart, "Containerfile");
    expect(recipe).toContain(`@openai/agents@${OPENAI_AGENTS_VERSION}`);
    const copied = /^COPY (images\/\S+) /m.exec(recipe)?.[1] ?? "";
    expect(existsSync(repo(copied))).toBe(true);
    expect(recipe).toContain(`bin/${launch.command}`);
  });
});
