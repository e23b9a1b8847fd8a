// `leviath import` of upstream's MCP configuration as upstream writes it: its own config.example.toml (a verbatim
// copy in test/fixtures/upstream), `transport` checked against the entry and not carried, a misspelt key refused
// naming the entry and the key, and `${VAR}` values carried into a secretRef with a finding that says which Secret
// and key to create (and, for a stdio server's env, the sandbox trade the admin must opt into themselves).
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { leviath, repo } from "./run-cli.ts";

const UPSTREAM = repo("test/fixtures/upstream/config.example.toml");
const tmp = mkdtempSync(join(tmpdir(), "leviath-import-upstream-"));

/** A config.toml of these lines, in the test's directory. */
function config(name: string, lines: string[]): string {
  const p = join(tmp, name);
  writeFileSync(p, `${lines.join("\n")}\n`);
  return p;
}

/** The 1-based line of the first line of `file` that is `text`. */
const lineOf = (file: string, text: string): number => readFileSync(file, "utf8").split("\n").indexOf(text) + 1;

/** Upstream's example with `from` (a whole line) replaced by `to`. */
function upstreamWith(name: string, from: string, to: string): string {
  const text = readFileSync(UPSTREAM, "utf8");
  expect(text.split("\n")).toContain(from);
  return config(name, text.split("\n").map((l) => (l === from ? to : l)));
}

describe("leviath import of upstream's config.example.toml", () => {
  it("imports it whole: the MCP servers as our policy says them, the header's ${VAR} from a Secret, said with the commands", () => {
    const r = leviath(["import", UPSTREAM, "--namespace", "team-a"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/^error/m);
    const policy = parse(r.stdout) as { kind: string; spec: { mcpServers: unknown[] } };
    expect(policy.kind).toBe("LeviathPolicy");
    expect(policy.spec.mcpServers).toEqual([
      { name: "filesystem", command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], env: { NODE_ENV: "production" } },
      { name: "remote", url: "https://mcp.example.com/v1", headers: { Authorization: "Bearer ${MY_MCP_TOKEN}" }, secretRef: { name: "remote-mcp" } },
    ]);
    expect(r.stderr).toContain([
      `warning: ${UPSTREAM}: mcp_servers[1]: MCP server 'remote' takes \${MY_MCP_TOKEN} in headers.Authorization from Secret 'remote-mcp' (its secretRef), key MY_MCP_TOKEN: ` +
        "in a cluster the sidecar reads ${VAR} only from the server's Secret, never from an environment. Create the Secret, and opt it in for this server, in each namespace whose Runs use the server:",
      `  kubectl -n team-a create secret generic remote-mcp --from-literal=MY_MCP_TOKEN="$MY_MCP_TOKEN"`,
      "  kubectl -n team-a label secret remote-mcp leviath.dev/mcp-server=remote",
      "",
    ].join("\n"));
    // A literal env value under a name that is no credential's is carried without a word; the policy sets nothing for the admin.
    expect(r.stderr).not.toContain("filesystem");
    expect(r.stdout).not.toContain("transport");
    expect(r.stdout).not.toContain("secretEnvInSandbox");
  });

  it("refuses a misspelt key of an entry, naming the entry, the key and its line, with the key it is close to", () => {
    const file = upstreamWith("typo.toml", 'transport = "http"', 'trasport = "http"');
    const r = leviath(["import", file]);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`error: ${file}:${lineOf(file, 'trasport = "http"')}: mcp_servers[1].trasport: unknown key of MCP server 'remote' (did you mean 'transport'?); valid: name, transport, url, headers, command, args, env\n`);
    const far = leviath(["import", config("far.toml", ["[[mcp_servers]]", "name = 'x'", "url = 'https://x.example/mcp'", "bearer = 'abc'"])]);
    expect(far.status).toBe(1);
    expect(far.stderr).toContain("mcp_servers[0].bearer: unknown key of MCP server 'x'; valid: name, transport, url, headers, command, args, env");
  });

  it("refuses a misspelt key the operator would carry elsewhere too (upstream's keys it does not use are warnings: import.test.ts)", () => {
    const typo = config("typos.toml", ["taint_trackin = true", "[security]", "allow_seed_comands = false", "[limits]", "interaction_timeout_sec = 5", "[safe_commands]", "shel = ['ls']"]);
    const r = leviath(["import", typo]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe([
      `error: ${typo}:1: taint_trackin: unknown key (did you mean 'taint_tracking'?): a misspelt key would leave that setting unset`,
      `error: ${typo}:3: [security] has unknown key 'allow_seed_comands' (did you mean 'allow_seed_commands'?): a misspelt key would leave that setting unset`,
      `error: ${typo}:5: [limits] has unknown key 'interaction_timeout_sec' (did you mean 'interaction_timeout_secs'?): a misspelt key would leave that setting unset`,
      `error: ${typo}:7: [safe_commands] has unknown key 'shel' (did you mean 'shell'?): a misspelt key would leave that setting unset`,
      "",
    ].join("\n"));
  });

  it("refuses a transport the entry contradicts, naming the entry", () => {
    const stdioWithUrl = config("stdio-url.toml", ["[[mcp_servers]]", "name = 'docs'", "transport = 'stdio'", "url = 'https://docs.example/mcp'"]);
    const r = leviath(["import", stdioWithUrl]);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`error: ${stdioWithUrl}:3: mcp_servers[0].transport: MCP server 'docs' says transport = "stdio" but has a url and no command: ` +
      'a stdio server is started by its command, an http server is reached at its url; set transport = "http" or replace the url by a command\n');
    const httpWithCommand = upstreamWith("http-command.toml", 'transport = "stdio"', 'transport = "http"');
    const h = leviath(["import", httpWithCommand]);
    expect(h.status).toBe(1);
    expect(h.stderr).toContain(`mcp_servers[0].transport: MCP server 'filesystem' says transport = "http" but has a command and no url`);
    const both = leviath(["import", config("both.toml", ["[[mcp_servers]]", "name = 'b'", "transport = 'http'", "url = 'https://b.example/mcp'", "command = 'b'"])]);
    expect(both.status).toBe(1);
    expect(both.stderr).toContain(`mcp_servers[0].transport: MCP server 'b' says transport = "http" but has a command too: a stdio server is started by its command, an http server is reached at its url; remove the command`);
    const sse = leviath(["import", config("sse.toml", ["[[mcp_servers]]", "name = 's'", "transport = 'sse'", "url = 'https://s.example/mcp'"])]);
    expect(sse.status).toBe(1);
    expect(sse.stderr).toContain(`mcp_servers[0].transport: MCP server 's': transport "sse" is not "stdio" or "http"`);
  });

  it("gives a stdio server's ${VAR} env a Secret too, says the sandbox trade and leaves the opt-in to the admin", () => {
    const file = config("stdio-secret.toml", [
      "[[mcp_servers]]", "name = 'Search_API'", "transport = 'stdio'", "command = 'mcp-search'",
      "[mcp_servers.env]", "SEARCH_KEY = '${SEARCH_KEY}'", "REGION = 'eu'",
    ]);
    const r = leviath(["import", file]);
    expect(r.status, r.stderr).toBe(0);
    expect(parse(r.stdout).spec.mcpServers).toEqual([
      { name: "Search_API", command: "mcp-search", env: { SEARCH_KEY: "${SEARCH_KEY}", REGION: "eu" }, secretRef: { name: "search-api-mcp" } },
    ]);
    expect(r.stderr).toBe([
      `warning: ${file}: mcp_servers[0]: MCP server 'Search_API' takes \${SEARCH_KEY} in env.SEARCH_KEY from Secret 'search-api-mcp' (its secretRef), key SEARCH_KEY: ` +
        "in a cluster the sidecar reads ${VAR} only from the server's Secret, never from an environment. Create the Secret, and opt it in for this server, in each namespace whose Runs use the server:",
      `  kubectl -n default create secret generic search-api-mcp --from-literal=SEARCH_KEY="$SEARCH_KEY"`,
      "  kubectl -n default label secret search-api-mcp leviath.dev/mcp-server=Search_API",
      "A stdio server runs in the Run's sandbox pod, where the model's commands can read its environment, so a value of this Secret in its env is the model's to read. " +
        "secretEnvInSandbox is left unset: the server is refused (never started) until you set secretEnvInSandbox: true on it in the LeviathPolicy, " +
        "which you should do only for a key you would hand the model itself.",
      "",
    ].join("\n"));
  });

  it("says a literal credential in a header or a credential's env, which the policy would show to whoever reads it", () => {
    const file = config("literal.toml", [
      "[[mcp_servers]]", "name = 'tickets'", "url = 'https://tickets.example/mcp'",
      "[mcp_servers.headers]", "Authorization = 'Bearer s3cr3t'", "Accept = 'application/json'", "X-Team = '${TEAM}'",
      "[[mcp_servers]]", "name = 'db'", "command = 'mcp-db'", "env = { DB_PASSWORD = 'hunter2', NODE_ENV = 'production' }",
    ]);
    const r = leviath(["import", file, "-n", "team-a"]);
    expect(r.status, r.stderr).toBe(0);
    const literal = (entry: number, server: string, where: string) =>
      `warning: ${file}: mcp_servers[${entry}]: MCP server '${server}' has a literal value in ${where}, carried into the LeviathPolicy as written: ` +
      "whoever can read the LeviathPolicy, or the ConfigMap that pins it in a Run's namespace, reads it. If it is a credential, write it as ${VAR} in config.toml and import again: it then comes from the server's Secret.\n";
    expect(r.stderr).toContain(literal(0, "tickets", "headers.Authorization"));
    expect(r.stderr).toContain(literal(1, "db", "env.DB_PASSWORD"));
    expect(r.stderr).toContain(`kubectl -n team-a create secret generic tickets-mcp --from-literal=TEAM="$TEAM"`);
    const servers = parse(r.stdout).spec.mcpServers as { name: string; secretRef?: unknown }[];
    expect(servers.map((s) => [s.name, s.secretRef])).toEqual([["tickets", { name: "tickets-mcp" }], ["db", undefined]]);
  });
});
