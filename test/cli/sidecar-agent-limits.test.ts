import { linkSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, get, makeTempDir, post, startSidecar, type CallAnswer, type SidecarProcess } from "./sidecar-harness.ts";

// The sidecar against its own agent (issue 14, findings 3, 5, 6, 8 and 9): labels, tool names, memory
// bounds, hard links, broad read paths and prompt texts, against the real standalone sidecar.
let root: string;

function makeTree(name: string, opts: { config?: string; agent?: string } = {}): { dir: string; args: string[]; work: string } {
  const dir = join(root, name);
  mkdirSync(join(dir, "work"), { recursive: true });
  mkdirSync(join(dir, "home", "vault"), { recursive: true });
  writeFileSync(join(dir, "home", "vault", "secret.txt"), "vault secret\n");
  writeFileSync(join(dir, "work", "notes.md"), "notes\n");
  writeFileSync(join(dir, "agent.leviath"), `[agent]\nname = '${name}'\n${opts.agent ?? ""}[security]\ntaint_tracking = true\n`);
  writeFileSync(join(dir, "config.toml"), opts.config ?? "");
  const args = ["--agent", join(dir, "agent.leviath"), "--config", join(dir, "config.toml"), "--workdir", join(dir, "work"), "--audit-dir", join(dir, "audit")];
  return { dir, args, work: join(dir, "work") };
}

const VAULT = { agent: "[read_paths]\nallow = ['~/vault']\n", config: "[tool_permissions]\nshell = 'allow'\n[agent_read_paths.NAME]\nallow = ['~/vault']\n" };

beforeAll(() => {
  root = makeTempDir("leviath-sidecar-limits-");
});

describe("finding 3: a label never goes down except by an eviction of that entry", () => {
  let sc: SidecarProcess;
  let home: string;
  beforeAll(async () => {
    const t = makeTree("labels", { agent: VAULT.agent, config: VAULT.config.replace("NAME", "labels") });
    home = join(t.dir, "home");
    sc = await startSidecar(t.args, { env: { LEVIATH_HOME: home } });
  });
  afterAll(async () => {
    expect(await sc.stop()).toBe(0);
  });

  const taint = async () => (await get<{ level: string }>(`${sc.url}/v1/context/taint`)).body.level;

  it("keeps the higher label when an input, a result or a new call reuses a private entry's id", async () => {
    // A call decided `run` while the context is public, reported later under the private entry's id.
    expect((await callTool(sc, "current_time", {}, "t1")).body).toMatchObject({ decision: "run" });
    expect((await callTool(sc, "read_file", { path: join(home, "vault", "secret.txt") }, "p1")).body).toMatchObject({ decision: "allow", label: "private" });
    const entry = { region: "conversation", id: "p1" };
    const input = await post(`${sc.url}/v1/context/entries`, { entries: [{ ...entry, source: "input" }] });
    expect(input.body).toMatchObject({ labelled: [{ id: "p1", level: "private" }], taint: "private" });
    const result = await post(`${sc.url}/v1/tool-calls/t1/result`, { entry });
    expect(result.body).toMatchObject({ label: "private", taint: "private" });
    const stored = await post<CallAnswer>(`${sc.url}/v1/tool-calls`, { id: "t2", tool: "current_time", args: {}, entry });
    expect(stored.body.decision).toBe("run");
    expect((await post(`${sc.url}/v1/tool-calls/t2/result`, {})).body).toMatchObject({ label: "private", taint: "private" });
    expect(await taint()).toBe("private");
    // Only the runtime's eviction of that entry lowers it.
    expect((await post(`${sc.url}/v1/context/evictions`, { entries: [entry] })).body).toMatchObject({ evicted: 1, taint: "public" });
  });
});

describe("finding 5: names are matched exactly; a name the stage does not offer is [unavailable]", () => {
  let sc: SidecarProcess;
  beforeAll(async () => {
    sc = await startSidecar(makeTree("names", { config: "[tool_permissions]\nshell = 'allow'\n" }).args);
  });
  afterAll(async () => {
    expect(await sc.stop()).toBe(0);
  });

  it("refuses every variant of a built-in name in a stage without available_tools", async () => {
    for (const tool of ["Shell", "shell ", "SHELL", "sh", "Web_Fetch", "submit-output", "READ_FILE"]) {
      const r = await callTool(sc, tool, { command: "echo x" });
      expect(r.status, tool).toBe(403);
      expect(r.body, tool).toMatchObject({ decision: "deny", code: "tool-unavailable", message: `[unavailable] Tool '${tool}' is not available in stage 'main'.` });
    }
    expect((await callTool(sc, "shell", { command: "echo x" })).body).toMatchObject({ decision: "allow", result: "x\n" });
    // Built-in names the runtime executes, and MCP-shaped names, are still offered (and gated as usual).
    expect((await callTool(sc, "current_time", {})).body).toMatchObject({ decision: "run" });
    expect((await callTool(sc, "github__create_issue", {})).body).toMatchObject({ decision: "ask" });
  });
});

describe("finding 6: memory is bounded under any sequence of calls", () => {
  let sc: SidecarProcess;
  let work: string;
  beforeAll(async () => {
    const t = makeTree("memory");
    work = t.work;
    for (const n of ["a", "b"]) writeFileSync(join(work, `${n}.txt`), n.repeat(5 * 1024 * 1024));
    sc = await startSidecar(t.args);
  });
  afterAll(async () => {
    expect(await sc.stop()).toBe(0);
  });

  it("bounds read_files in total, not only per file", async () => {
    const r = await callTool(sc, "read_files", { paths: ["a.txt", "b.txt"] });
    expect(r.body.decision).toBe("allow");
    const result = r.body.result!;
    expect(result.length).toBeLessThan(6 * 1024 * 1024);
    expect(result).toContain("### [a.txt]\naaaa");
    expect(result).toContain("### [b.txt]\n[error] Failed to read: the files of one read_files call may hold 8 MiB together");
  });

  it("refuses a call once 256 are pending, with a clear message", async () => {
    const asks = await Promise.all(Array.from({ length: 256 }, (_, i) => callTool(sc, "write_file", { path: `f${i}`, content: "x" }, `w${i}`)));
    expect(asks.every((a) => a.status === 202)).toBe(true);
    const full = await callTool(sc, "write_file", { path: "f", content: "x" }, "w-full");
    expect(full.status).toBe(503);
    expect(full.body).toMatchObject({ decision: "deny", code: "pending-full" });
    expect(full.body.message).toContain("256 calls are already pending");
  });
});

describe("finding 8: a file with more than one hard link is never read or written", () => {
  it("refuses a hard link in the workdir to an undeclared file, and leaves that file as it was", async () => {
    const t = makeTree("links", { config: "[tool_permissions]\nwrite_file = 'allow'\n" });
    const outside = join(t.dir, "undeclared.txt");
    writeFileSync(outside, "outside secret\n");
    linkSync(outside, join(t.work, "link.txt"));
    const sc = await startSidecar(t.args);
    try {
      const read = await callTool(sc, "read_file", { path: "link.txt" });
      expect(read.status).toBe(403);
      expect(read.body).toMatchObject({ decision: "deny", code: "hard-link" });
      expect(read.body.message).not.toContain("outside secret");
      const write = await callTool(sc, "write_file", { path: "link.txt", content: "overwritten\n" });
      expect(write.body).toMatchObject({ decision: "deny", code: "hard-link" });
      expect(readFileSync(outside, "utf8")).toBe("outside secret\n");
      const many = await callTool(sc, "read_files", { paths: ["notes.md", "link.txt"] });
      expect(many.body.result).toContain("### [link.txt]\n[error] 'link.txt' is a file with 2 hard links");
      // A file with one name is read and written as before.
      expect((await callTool(sc, "read_file", { path: "notes.md" })).body).toMatchObject({ decision: "allow", result: "notes\n" });
    } finally {
      expect(await sc.stop()).toBe(0);
    }
  });
});

describe("finding 9: broad regex read paths are flagged; prompts show what they approve", () => {
  it("warns at start about regex:/x|.* as about regex:/.*, and refuses to start when it is granted", async () => {
    const t = makeTree("broad", { agent: "[read_paths]\nallow = ['regex:/x|.*']\n" });
    const granted = makeTree("broad-granted", { agent: "[read_paths]\nallow = ['regex:/x|.*']\n", config: "[security]\nallow_blueprint_read_paths = true\n" });
    // Granted, it matches everything, the sidecar's own audit included.
    await expect(startSidecar(granted.args)).rejects.toThrow(/exited \(2\)[\s\S]*readable through a granted read path/);
    const sc = await startSidecar(t.args);
    try {
      await new Promise((done) => setTimeout(done, 200));
      expect(sc.stderr()).toContain("read_paths entry 'regex:/x|.*' is very broad");
      expect(sc.stderr()).toContain("[broad-read-path]");
    } finally {
      expect(await sc.stop()).toBe(0);
    }
  });

  it("shows the tool's path, command or arguments, escaped and truncated", async () => {
    // Naming http_post offers it (a stage without a tool list offers the HTTP tools only where the policy names them).
    const sc = await startSidecar(makeTree("prompts", { config: "[tool_permissions]\nhttp_post = 'ask'\n" }).args);
    try {
      const write = await callTool(sc, "write_file", { path: "notes.md", content: "x" });
      expect(write.body.approval?.prompt).toBe("Allow tool 'write_file'? path: notes.md");
      const long = `echo ${"a".repeat(600)}\nrm -rf ~`;
      const shell = await callTool(sc, "shell", { command: long });
      expect(shell.body.approval?.prompt).toBe(`Allow shell command: echo ${"a".repeat(495)}… (115 more characters)`);
      const hidden = await callTool(sc, "shell", { command: "ls\u001b[2K\rrm -rf ~" });
      expect(hidden.body.approval?.prompt).toBe("Allow shell command: ls\\u001b[2K\\rrm -rf ~");
      const post = await callTool(sc, "http_post", { url: "https://hooks.example.com/x", body: "notes" });
      expect(post.body.approval?.prompt).toBe(`Allow tool 'http_post'? target: hooks.example.com; arguments: {"url":"https://hooks.example.com/x","body":"notes"}`);
    } finally {
      expect(await sc.stop()).toBe(0);
    }
  });
});
