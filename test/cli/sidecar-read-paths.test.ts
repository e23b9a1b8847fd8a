import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, makeTempDir, parseJsonLines, startSidecar, type SidecarProcess } from "./sidecar-harness.ts";

// A real tree: a home with a declared tree (part granted, part granted by a nested glob, part not), a planted
// symlink pointing out of it, a link from outside pointing in, dangling links, dotfiles and a workdir.
let root: string;
let home: string;
let work: string;
let audit: string;
let sc: SidecarProcess;

beforeAll(async () => {
  root = makeTempDir("leviath-sidecar-rp-");
  home = join(root, "home");
  work = join(root, "work");
  audit = join(root, "audit");
  mkdirSync(join(home, "projects", "public"), { recursive: true });
  mkdirSync(join(home, "projects", "private", "notes"), { recursive: true });
  mkdirSync(join(home, ".ssh"), { recursive: true });
  mkdirSync(join(work, "sub"), { recursive: true });
  writeFileSync(join(home, "projects", "public", "readme.md"), "public readme\n");
  writeFileSync(join(home, "projects", "public", ".env"), "TOKEN=dotfile\n");
  writeFileSync(join(home, "projects", "private", "secret.txt"), "private secret\n");
  writeFileSync(join(home, "projects", "private", "notes", "plan.md"), "the plan\n");
  writeFileSync(join(home, ".ssh", "id_ed25519"), "SSH KEY\n");
  writeFileSync(join(root, "outside.txt"), "outside\n");
  writeFileSync(join(work, "notes.md"), "notes\n");
  writeFileSync(join(work, ".hidden"), "hidden\n");
  symlinkSync(join(home, ".ssh"), join(home, "projects", "public", "planted"));
  symlinkSync(join(root, "gone"), join(home, "projects", "public", "dangling"));
  symlinkSync(join(home, "projects", "public"), join(root, "outside-link"));
  symlinkSync(join(root, "outside.txt"), join(work, "escape"));
  symlinkSync(join(root, "created-by-write.txt"), join(work, "dangle-out"));
  execFileSync("mkfifo", [join(work, "fifo")]);
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'cto'\n[read_paths]\nallow = ['~/projects']\n[security]\ntaint_tracking = true\n");
  writeFileSync(join(root, "config.toml"), "[tool_permissions]\nwrite_file = 'allow'\nedit_file = 'allow'\n[agent_read_paths.cto]\nallow = ['~/projects/public', 'glob:~/projects/private/**/*.md']\n");
  sc = await startSidecar(["--agent", join(root, "agent.leviath"), "--config", join(root, "config.toml"), "--workdir", work, "--audit-dir", audit], { env: { LEVIATH_HOME: home } });
});

afterAll(async () => {
  expect(await sc.stop()).toBe(0);
});

const read = (path: string) => callTool(sc, "read_file", { path });

describe("leviath sidecar: file tools on a real tree", () => {
  it("reads inside the workdir, dotfiles included, labelled private because a grant is active", async () => {
    const r = await read("notes.md");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ decision: "allow", result: "notes\n", isError: false, label: "private" });
    expect((await read(".hidden")).body.result).toBe("hidden\n");
  });

  it("reads a granted file by absolute path, by a relative path and through a link from outside", async () => {
    expect((await read(join(home, "projects/public/readme.md"))).body).toMatchObject({ decision: "allow", result: "public readme\n" });
    expect((await read("../home/projects/public/readme.md")).body.result).toBe("public readme\n");
    expect((await read(join(root, "outside-link/readme.md"))).body.result).toBe("public readme\n");
    expect((await read(join(home, "projects/public/.env"))).body.result).toBe("TOKEN=dotfile\n");
  });

  it("allows a nested glob grant inside an ungranted part of the declaration, and refuses the rest naming the agent", async () => {
    expect((await read(join(home, "projects/private/notes/plan.md"))).body.result).toBe("the plan\n");
    const secret = join(home, "projects/private/secret.txt");
    const r = await read(secret);
    expect(r.status).toBe(403);
    expect(r.body).toEqual({
      id: r.body.id, tool: "read_file", decision: "deny", code: "not-granted",
      message: `[error] path '${secret}' matches this agent's [read_paths], but your config does not grant it; add it under [agent_read_paths.cto] (or set allow_blueprint_read_paths = true under [security]) in your config.toml`,
    });
  });

  it("refuses a symlink planted in the granted tree that points at ~/.ssh, and a workdir link pointing out", async () => {
    const planted = join(home, "projects/public/planted/id_ed25519");
    const r = await read(planted);
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ code: "not-declared", message: `[error] path '${planted}' is outside the working directory and not in this agent's [read_paths]` });
    expect(JSON.stringify(r.body)).not.toContain("SSH KEY");
    expect((await read("escape")).body).toMatchObject({ decision: "deny", code: "not-declared" });
    expect((await read("/etc/hostname")).body).toMatchObject({ decision: "deny", code: "not-declared" });
  });

  it("allows a dangling link under a grant by policy, and the read fails as upstream's does", async () => {
    const dangling = join(home, "projects/public/dangling");
    const r = await read(dangling);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ decision: "allow", isError: true, result: `[error] Failed to read '${dangling}': No such file or directory (os error 2)` });
  });

  it("refuses '..' above '/' as unresolvable, and folds '..' lexically inside", async () => {
    const up = `${"../".repeat(work.split("/").length + 1)}etc/passwd`;
    expect((await read(up)).body).toMatchObject({ decision: "deny", code: "unresolvable", message: `[error] path '${up}' cannot be resolved` });
    expect((await read("sub/../notes.md")).body.result).toBe("notes\n");
  });

  it("lists a granted directory, and reports a directory given to read_file", async () => {
    const r = await callTool(sc, "list_dir", { path: join(home, "projects/public") });
    expect(r.body.result).toBe(".env\ndangling\nplanted\nreadme.md");
    expect((await read("sub")).body.result).toBe("[error] 'sub' is a directory, not a file. Use list_dir to see what is in it, then read_file on one of the entries.");
  });

  it("never blocks on a FIFO planted in the tree", async () => {
    expect((await read("fifo")).body).toMatchObject({ isError: true, result: "[error] Failed to read 'fifo': not a regular file" });
  });

  it("reads several files, refusing per element, and refuses the call when every element is refused", async () => {
    const secret = join(home, "projects/private/secret.txt");
    const r = await callTool(sc, "read_files", { paths: ["notes.md", secret] });
    expect(r.status).toBe(200);
    expect(r.body.result).toBe(`### [notes.md]\nnotes\n\n\n### [${secret}]\n[error] path '${secret}' matches this agent's [read_paths], but your config does not grant it; add it under [agent_read_paths.cto] (or set allow_blueprint_read_paths = true under [security]) in your config.toml`);
    const all = await callTool(sc, "read_files", { paths: [secret, "/etc/hostname"] });
    expect(all.status).toBe(403);
    expect(all.body.code).toBe("not-granted");
  });

  it("sees files and links created after it started", async () => {
    writeFileSync(join(home, "projects/public/later.md"), "later\n");
    expect((await read(join(home, "projects/public/later.md"))).body.result).toBe("later\n");
    symlinkSync(join(home, ".ssh/id_ed25519"), join(home, "projects/public/later-link"));
    expect((await read(join(home, "projects/public/later-link"))).body).toMatchObject({ decision: "deny", code: "not-declared" });
  });

  it("writes and edits inside the workdir only, creating directories, never through a link", async () => {
    const w = await callTool(sc, "write_file", { path: "sub/new/deep.txt", content: "deep\n" });
    expect(w.body).toMatchObject({ decision: "allow", result: "Wrote 5 bytes to 'sub/new/deep.txt'", isError: false });
    expect(readFileSync(join(work, "sub/new/deep.txt"), "utf8")).toBe("deep\n");
    const e = await callTool(sc, "edit_file", { path: "sub/new/deep.txt", old_str: "deep", new_str: "deeper" });
    expect(e.body.result).toBe("Edited 'sub/new/deep.txt'");
    expect(readFileSync(join(work, "sub/new/deep.txt"), "utf8")).toBe("deeper\n");
    const granted = join(home, "projects/public/readme.md");
    const out = await callTool(sc, "write_file", { path: granted, content: "x" });
    expect(out.status).toBe(403);
    expect(out.body).toMatchObject({ code: "outside-workdir", message: `[error] path '${granted}' would escape the working directory (${work}). Use a path inside the workspace instead - a relative path resolves against it.` });
    const viaLink = await callTool(sc, "write_file", { path: "dangle-out", content: "escaped" });
    expect(viaLink.body).toMatchObject({ isError: true, result: "[error] Failed to write 'dangle-out': Too many levels of symbolic links (os error 40)" });
    expect(existsSync(join(root, "created-by-write.txt"))).toBe(false);
  });

  it("records every decision with the requested paths, never the contents", async () => {
    const lines = parseJsonLines(readFileSync(join(audit, "cto", "stages", "0", "decisions.jsonl"), "utf8"));
    const planted = lines.find((l) => (l["paths"] as string[] | undefined)?.[0]?.endsWith("planted/id_ed25519"));
    expect(planted).toMatchObject({ agent_id: "cto", tool_name: "read_file", decision: "deny", decision_source: "read_path", code: "not-declared", stage: "main" });
    expect(lines.some((l) => l["decision"] === "allow" && l["decision_source"] === "auto_allow")).toBe(true);
    expect(readFileSync(join(audit, "cto", "stages", "0", "decisions.jsonl"), "utf8")).not.toContain("public readme");
  });
});
