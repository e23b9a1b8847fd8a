// `leviath model-server` as a user runs it: the real process, a YAML script or --echo, real HTTP in the three
// protocols, the same request checks as the tests' stand-in, and the errors a user can make named.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../integration/harness/control-plane.ts";
import { leviath } from "./run-cli.ts";

const running: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of running.splice(0)) c.kill("SIGTERM");
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function scriptFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "model-script-"));
  dirs.push(dir);
  const file = join(dir, "script.yaml");
  writeFileSync(file, text);
  return file;
}

/** Starts the command on a free port; resolves with its URL and what it printed so far. */
function start(args: string[]): Promise<{ url: string; child: ChildProcess; log: () => string }> {
  const child = spawn(join(REPO_ROOT, "bin", "leviath"), ["model-server", "--listen", "127.0.0.1:0", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  running.push(child);
  let log = "";
  return new Promise((resolve, reject) => {
    child.stderr!.on("data", (d: Buffer) => {
      log += d.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
      if (m) resolve({ url: m[1]!, child, log: () => log });
    });
    child.on("exit", (code) => reject(new Error(`model-server exited ${code}: ${log}`)));
  });
}

const anthropic = (url: string, messages: unknown[]) => fetch(`${url}/v1/messages`, {
  method: "POST",
  headers: { "content-type": "application/json", "x-api-key": "any", "anthropic-version": "2023-06-01" },
  body: JSON.stringify({ model: "claude-test", max_tokens: 256, messages, tools: [{ name: "read_file", input_schema: { type: "object", properties: { path: { type: "string" } } } }] }),
});
const chat = (url: string, messages: unknown[]) => fetch(`${url}/v1/chat/completions`, {
  method: "POST", headers: { "content-type": "application/json", authorization: "Bearer any" }, body: JSON.stringify({ model: "gpt-test", messages }),
});

describe("leviath model-server", () => {
  it("serves a YAML script's calls, an echo of the tool's result and the answer, in order, then round again with repeat", async () => {
    const file = scriptFile([
      "steps:",
      "  - calls: [{name: read_file, args: {path: notes.md}}]",
      "  - echo: true",
      "  - text: Done.",
      "repeat: true",
    ].join("\n"));
    const { url, log } = await start(["--script", file]);
    const first = (await (await anthropic(url, [{ role: "user", content: "Summarise notes.md." }])).json()) as { content: { type: string; name?: string; input?: unknown; id?: string }[]; stop_reason: string };
    expect(first.stop_reason).toBe("tool_use");
    expect(first.content).toEqual([expect.objectContaining({ type: "tool_use", name: "read_file", input: { path: "notes.md" } })]);
    const toolUseId = first.content[0]!.id!;
    const second = (await (await anthropic(url, [
      { role: "user", content: "Summarise notes.md." },
      { role: "assistant", content: [{ type: "tool_use", id: toolUseId, name: "read_file", input: { path: "notes.md" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: toolUseId, content: "# Notes\nship on Friday" }] },
    ])).json()) as { content: { type: string; text?: string }[] };
    expect(second.content).toEqual([{ type: "text", text: "echo: # Notes\nship on Friday" }]);
    const third = (await (await chat(url, [{ role: "user", content: "and?" }])).json()) as { choices: { message: { content: string }; finish_reason: string }[] };
    expect(third.choices[0]).toMatchObject({ message: { content: "Done." }, finish_reason: "stop" });
    // repeat: the fourth request is the first step again.
    const fourth = (await (await chat(url, [{ role: "user", content: "again" }])).json()) as { choices: { message: { tool_calls: { function: { name: string; arguments: string } }[] } }[] };
    expect(fourth.choices[0]!.message.tool_calls[0]!.function).toEqual({ name: "read_file", arguments: JSON.stringify({ path: "notes.md" }) });
    expect(log()).toMatch(/model-server: anthropic \/v1\/messages request 1\n/);
  });

  it("refuses a request the service would refuse, with the service's 400, and takes no step", async () => {
    const { url, log } = await start(["--script", scriptFile("steps:\n  - text: only\n")]);
    const bad = await fetch(`${url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" }, body: JSON.stringify({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "hi" }] }) });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { type: string; message: string } }).error).toMatchObject({ type: "invalid_request_error", message: "no x-api-key or authorization header" });
    expect(log()).toContain("refused (400): no x-api-key or authorization header");
    const ok = (await (await anthropic(url, [{ role: "user", content: "hi" }])).json()) as { content: unknown[] };
    expect(ok.content).toEqual([{ type: "text", text: "only" }]);
    // No repeat: past the last step, the 500 says why.
    const past = await anthropic(url, [{ role: "user", content: "hi" }]);
    expect(past.status).toBe(500);
    expect(await past.text()).toContain("the script has no step left for this request");
  });

  it("echoes the last input in --echo mode, the Responses API included", async () => {
    const { url } = await start(["--echo"]);
    const res = await fetch(`${url}/v1/responses`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer any" }, body: JSON.stringify({ model: "gpt-test", input: "hello there" }) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { output: { type: string; content?: { text: string }[] }[] };
    expect(body.output.find((o) => o.type === "message")?.content?.[0]?.text).toBe("echo: hello there");
  });

  it("names the bad entry of a script, and refuses flags that do not fit", () => {
    const bad = leviath(["model-server", "--script", scriptFile("steps:\n  - text: ok\n  - calls: [{args: {}}]\n")]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/script\.yaml: steps\[1\]\.calls\[0\]\.name: /);
    const empty = leviath(["model-server", "--script", scriptFile("steps:\n  - {}\n")]);
    expect(empty.stderr).toContain("steps[0]: a step needs text, calls or echo: true");
    const typo = leviath(["model-server", "--script", scriptFile("step:\n  - text: x\n")]);
    expect(typo.stderr).toContain("script.yaml: step: unknown key (a step has text, calls and echo; the script has steps and repeat)");
    expect(leviath(["model-server", "--script", scriptFile("steps:\n  - txt: x\n")]).stderr).toContain("steps[0].txt: unknown key");
    expect(leviath(["model-server"]).status).toBe(2);
    expect(leviath(["model-server", "--echo", "--script", "x"]).stderr).toContain("give exactly one of --script FILE, --echo");
    expect(leviath(["model-server", "--help"]).stdout).toContain("Usage: leviath model-server");
  });
});
