import { execFileSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, mkdtempSync, readFileSync, realpathSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { buildReadPathPolicy, resolveRead, type PathFs } from "../../policy/read-paths/index.ts";
import { openCheckedForRead, openCheckedForWrite, readDescriptor } from "./checked-open.ts";
import { checkFilePaths, executeFileTool } from "./file-tools.ts";

// The swap happens exactly between the check and the open, deterministically: what a racing process could
// do in that window. A plain open of the checked path would read the secret; the sidecar must not.
const fs: PathFs = { realpath: (p) => realpathSync.native(p) };
let root: string;
let granted: string;
let work: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "leviath-checked-")));
  granted = join(root, "granted");
  work = join(root, "work");
  mkdirSync(join(granted, "dir"), { recursive: true });
  mkdirSync(join(root, "secret"));
  mkdirSync(work);
  writeFileSync(join(granted, "file.txt"), "INSIDE\n");
  writeFileSync(join(granted, "dir", "file.txt"), "INSIDE\n");
  writeFileSync(join(root, "secret", "file.txt"), "SECRET\n");
});

function ctx() {
  const built = buildReadPathPolicy({ agentName: "a", declared: [granted], granted: [granted], allowBlueprintReadPaths: false, workdir: work, home: undefined });
  if (!built.ok) throw new Error(built.error);
  return { workdir: work, policy: built.value, fs };
}

describe("a swap between the check and the open", () => {
  it("of the final component into a symlink pointing out is refused", () => {
    const path = join(granted, "file.txt");
    const checks = checkFilePaths("read_file", { path }, ctx());
    expect(checks[0]!.resolution).toMatchObject({ ok: true, decision: "Allowed", canonicalPath: path });
    renameSync(path, join(granted, "moved.txt"));
    symlinkSync(join(root, "secret", "file.txt"), path);
    expect(readFileSync(path, "utf8")).toBe("SECRET\n");
    const out = executeFileTool("read_file", { path }, checks);
    expect(out).toEqual({ kind: "refused", refusal: { code: "path-changed", source: "path_changed", message: `[error] path '${path}' changed while it was being opened; it was not read` } });
  });

  it("of an intermediate directory into a symlink pointing out is refused", () => {
    const path = join(granted, "dir", "file.txt");
    const checks = checkFilePaths("read_file", { path }, ctx());
    renameSync(join(granted, "dir"), join(granted, "dir.bak"));
    symlinkSync(join(root, "secret"), join(granted, "dir"));
    expect(readFileSync(path, "utf8")).toBe("SECRET\n");
    expect(executeFileTool("read_file", { path }, checks)).toMatchObject({ kind: "refused", refusal: { code: "path-changed" } });
    const listed = executeFileTool("list_dir", { path: join(granted, "dir") }, checkFilePaths("list_dir", { path: join(granted, "dir") }, ctx()));
    expect(listed).toMatchObject({ kind: "refused", refusal: { code: "not-declared" } });
  });

  it("of a directory being listed is refused", () => {
    const path = join(granted, "dir");
    const checks = checkFilePaths("list_dir", { path }, ctx());
    renameSync(path, join(granted, "dir.bak"));
    symlinkSync(join(root, "secret"), path);
    expect(executeFileTool("list_dir", { path }, checks)).toMatchObject({ kind: "refused", refusal: { code: "path-changed" } });
  });

  it("with no swap, reads the file that was checked", () => {
    const path = join(granted, "dir", "file.txt");
    expect(executeFileTool("read_file", { path }, checkFilePaths("read_file", { path }, ctx()))).toEqual({ kind: "done", result: "INSIDE\n", isError: false });
    expect(resolveRead(path, ctx())).toMatchObject({ ok: true });
  });
});

describe("openCheckedForWrite", () => {
  it("creates missing directories and the file, following no symlink", () => {
    const opened = openCheckedForWrite(join(work, "a", "b", "c.txt"), { create: true });
    expect(opened).toMatchObject({ ok: true, realPath: join(work, "a", "b", "c.txt") });
    expect(existsSync(join(work, "a", "b", "c.txt"))).toBe(true);
  });

  it("refuses a symlink anywhere on the path, never creating a file through it", () => {
    symlinkSync(join(root, "secret"), join(work, "link"));
    expect(openCheckedForWrite(join(work, "link", "new.txt"), { create: true })).toMatchObject({ ok: false, reason: "os" });
    expect(existsSync(join(root, "secret", "new.txt"))).toBe(false);
    symlinkSync(join(root, "secret", "planted.txt"), join(work, "final"));
    expect(openCheckedForWrite(join(work, "final"), { create: true })).toMatchObject({ ok: false, reason: "os" });
    expect(existsSync(join(root, "secret", "planted.txt"))).toBe(false);
  });
});

describe("openCheckedForRead", () => {
  it("does not block on a FIFO, and reports a final symlink as an error rather than following it", () => {
    execFileSync("mkfifo", [join(work, "fifo")]);
    const fifo = openCheckedForRead(join(work, "fifo"), false);
    expect(fifo.ok).toBe(true);
    symlinkSync(join(root, "secret", "file.txt"), join(work, "link"));
    expect(openCheckedForRead(join(work, "link"), false)).toMatchObject({ ok: false, reason: "os" });
    unlinkSync(join(work, "link"));
  });
});

describe("readDescriptor", () => {
  const readAt = (path: string, cap: number) => {
    const fd = openSync(path, "r");
    try {
      return readDescriptor(fd, cap);
    } finally {
      closeSync(fd);
    }
  };

  it("reads a whole file of any size around its buffers' sizes, and refuses one over the cap", () => {
    for (const size of [0, 1, 550, 4095, 4096, 4097, 70_000]) {
      const data = Buffer.from(Array.from({ length: size }, (_, i) => (i * 31 + size) % 251));
      const path = join(root, `f${size}`);
      writeFileSync(path, data);
      const r = readAt(path, 70_000);
      expect(r.ok && r.data.equals(data), `size ${size}`).toBe(true);
    }
    expect(readAt(join(root, "f4097"), 4096)).toEqual({ ok: false, reason: "too-large" });
    expect(readAt(join(root, "f4096"), 4096)).toMatchObject({ ok: true });
  });

  it("reads on past the size fstat gave, up to the cap (files that grow, or /proc files of size 0)", () => {
    const cmdline = readFileSync("/proc/self/cmdline");
    const r = readAt("/proc/self/cmdline", 1024 * 1024);
    expect(r.ok && r.data.equals(cmdline)).toBe(true);
    // /proc/self/maps is longer than one probe read: its lines must come back whole and in order.
    const maps = readAt("/proc/self/maps", 1024 * 1024);
    expect(maps.ok && maps.data.length > 4096).toBe(true);
    if (maps.ok) for (const line of maps.data.toString("utf8").trimEnd().split("\n")) expect(line).toMatch(/^[0-9a-f]+-[0-9a-f]+ [-rwxps]{4} /);
    expect(readAt("/proc/self/cmdline", 3)).toEqual({ ok: false, reason: "too-large" });
  });
});
