// docs/runtimes.md against the code it describes: its Agent and LeviathPolicy examples against the schemas and the
// ceiling (and the refusal it quotes), its settings table against the launch the claude-code adapter builds, and
// its image recipe against the install the tests run (the same npm arguments and pinned version).
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { AgentSpecSchema } from "../../src/api/agent.ts";
import { EMPTY_POLICY, LeviathPolicySpecSchema } from "../../src/api/policy.ts";
import { decideRuntimeCeilings } from "../../src/policy/ceilings.ts";
import { buildClaudeCodeLaunch } from "../../src/runtimes/claude-code.ts";
import { buildInstallArgs, CLAUDE_CODE } from "../clients/install-client.ts";
import { repo } from "./run-cli.ts";

const doc = readFileSync(repo("docs/runtimes.md"), "utf8");
const blocks = (lang: string) => [...doc.matchAll(new RegExp("```" + lang + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!);
const objects = blocks("yaml").flatMap((y) => parseAllDocuments(y).map((d) => d.toJS() as { kind: string; spec: unknown }));
const section = (title: string) => doc.slice(doc.indexOf(title), doc.indexOf("\n### ", doc.indexOf(title) + 1));

describe("docs/runtimes.md", () => {
  it("has an Agent of kind claude-code that its LeviathPolicy allows, and quotes the refusal without it", () => {
    const policy = LeviathPolicySpecSchema.parse(objects.find((o) => o.kind === "LeviathPolicy")!.spec);
    const agent = AgentSpecSchema.parse(objects.find((o) => o.kind === "Agent")!.spec);
    expect(agent.runtime?.kind).toBe("claude-code");
    expect(decideRuntimeCeilings(policy.ceilings, agent, "ghcr.io/leviath/leviath-agent:0.1.0")).toBeUndefined();
    const refused = decideRuntimeCeilings(EMPTY_POLICY.ceilings, agent, undefined);
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

  it("builds the image with the install the tests run, at the version they pin", () => {
    const containerfile = readFileSync(repo("images/claude-code/Containerfile"), "utf8");
    const recipe = blocks("dockerfile")[0]!;
    expect(containerfile).toContain(recipe);
    expect(recipe).toContain(`RUN npm ${buildInstallArgs(CLAUDE_CODE, "/opt/claude-code").join(" ")} `);
    expect(readFileSync(repo("scripts/build-images"), "utf8")).toContain(`\nCLAUDE_CODE_VERSION=${CLAUDE_CODE.version}\n`);
    expect(doc).toContain(`~/.cache/leviath/clients/claude-code-${CLAUDE_CODE.version}`);
  });
});
