// Opening exactly the file that was checked (DESIGN.md §4). A read opens the checked real path without
// following a final symlink, asks the kernel which file the descriptor really is (/proc/self/fd), and refuses
// when that is not the path the decision was made on: a symlink swapped in after the check, anywhere on the
// path, cannot widen a grant. A write walks the path one directory descriptor at a time and never follows a
// symlink at all, so it cannot create a file anywhere else either.
import { closeSync, constants, fstatSync, ftruncateSync, mkdirSync, openSync, readSync, readlinkSync, writeSync } from "node:fs";

const { O_RDONLY, O_RDWR, O_CREAT, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = constants;

/** The descriptor of the checked file, or why there is none. */
export type CheckedOpen =
  | { readonly ok: true; readonly fd: number; readonly realPath: string }
  /** The descriptor's real path is not the checked one: the tree changed between the check and the open. */
  | { readonly ok: false; readonly reason: "changed"; readonly realPath: string }
  /** A regular file with more than one name: its other names may be anywhere, so no check covers it. */
  | { readonly ok: false; readonly reason: "linked"; readonly links: number }
  | { readonly ok: false; readonly reason: "os"; readonly error: unknown };

/** The path of an open descriptor as the kernel resolved it. */
export function readDescriptorPath(fd: number): string {
  return readlinkSync(`/proc/self/fd/${fd}`);
}

function verify(fd: number, expected: string): CheckedOpen {
  let realPath: string;
  try {
    realPath = readDescriptorPath(fd);
  } catch (error) {
    closeSync(fd);
    return { ok: false, reason: "os", error };
  }
  if (realPath !== expected) {
    closeSync(fd);
    return { ok: false, reason: "changed", realPath };
  }
  // A hard link is the same file under another name, and the kernel cannot say where the others are: a link in
  // the workdir to an undeclared file would be read, or written through, as if it were a workdir file. So a
  // regular file with more than one link is never opened, whichever name it is reached by.
  let links: number;
  try {
    const st = fstatSync(fd);
    links = st.isFile() ? st.nlink : 1;
  } catch (error) {
    closeSync(fd);
    return { ok: false, reason: "os", error };
  }
  if (links > 1) {
    closeSync(fd);
    return { ok: false, reason: "linked", links };
  }
  return { ok: true, fd, realPath };
}

/**
 * Open a checked real path for reading. O_NONBLOCK keeps a FIFO planted in the tree from blocking the
 * sidecar; O_NOFOLLOW refuses a final symlink (intermediate ones are caught by the real-path check).
 */
export function openCheckedForRead(realPath: string, directory: boolean): CheckedOpen {
  let fd: number;
  try {
    fd = openSync(realPath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | (directory ? O_DIRECTORY : 0));
  } catch (error) {
    return { ok: false, reason: "os", error };
  }
  return verify(fd, realPath);
}

function openDirectoryStep(parentFd: number, name: string, create: boolean): number {
  const path = `/proc/self/fd/${parentFd}/${name}`;
  const flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
  try {
    return openSync(path, flags);
  } catch (error) {
    if (!create || (error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    // mkdir never follows a final symlink (EEXIST), and the new directory is then opened without following one.
    mkdirSync(path);
    return openSync(path, flags);
  }
}

/**
 * Open a checked real path for writing, creating missing parent directories and the file when asked. Each
 * component is opened relative to its parent's descriptor with O_NOFOLLOW, so no symlink is ever followed.
 */
export function openCheckedForWrite(realPath: string, opts: { readonly create: boolean }): CheckedOpen {
  const parts = realPath.split("/").filter((p) => p !== "");
  const name = parts.pop();
  if (name === undefined) return { ok: false, reason: "os", error: Object.assign(new Error("is a directory"), { code: "EISDIR" }) };
  let dirFd: number;
  try {
    dirFd = openSync("/", O_RDONLY | O_DIRECTORY);
  } catch (error) {
    return { ok: false, reason: "os", error };
  }
  try {
    for (const part of parts) {
      const next = openDirectoryStep(dirFd, part, opts.create);
      closeSync(dirFd);
      dirFd = next;
    }
    const fd = openSync(`/proc/self/fd/${dirFd}/${name}`, O_RDWR | O_NOFOLLOW | O_NONBLOCK | (opts.create ? O_CREAT : 0), 0o666);
    return verify(fd, realPath);
  } catch (error) {
    return { ok: false, reason: "os", error };
  } finally {
    closeSync(dirFd);
  }
}

/** What reading a descriptor gave. */
export type ReadResult =
  | { readonly ok: true; readonly data: Buffer }
  | { readonly ok: false; readonly reason: "directory" | "not-regular" | "too-large" }
  | { readonly ok: false; readonly reason: "os"; readonly error: unknown };

/**
 * Where the read that confirms the end of a file goes. One buffer for the process: a call reads a whole file
 * synchronously, and this read finds nothing unless the file grew since fstat. A fresh 64 KiB buffer for it on
 * every call was 64 MB/s of short-lived ArrayBuffers at 1,000 reads/s, and set the sidecar's GC pauses.
 */
const endProbe = Buffer.allocUnsafe(4096);

/** Read a whole regular file from its descriptor, up to `cap` bytes. */
export function readDescriptor(fd: number, cap: number): ReadResult {
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) return { ok: false, reason: "directory" };
    if (!stat.isFile()) return { ok: false, reason: "not-regular" };
    if (stat.size > cap) return { ok: false, reason: "too-large" };
    const chunks: Buffer[] = [];
    let total = 0;
    // One read of the size fstat gave (plus a byte, to notice growth), then reads into the probe until one finds
    // nothing; a file that grew meanwhile is read on, chunk by chunk, up to the cap.
    const first = Buffer.allocUnsafe(Math.min(stat.size + 1, cap + 1));
    let n = readSync(fd, first, 0, first.length, 0);
    while (n > 0) {
      const chunk = chunks.length === 0 ? first.subarray(0, n) : Buffer.from(endProbe.subarray(0, n));
      total += n;
      // Stop at the cap rather than read whatever is being appended.
      if (total > cap) return { ok: false, reason: "too-large" };
      chunks.push(chunk);
      n = readSync(fd, endProbe, 0, Math.min(endProbe.length, cap + 1 - total), total);
    }
    return { ok: true, data: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total) };
  } catch (error) {
    return { ok: false, reason: "os", error };
  }
}

/** Replace a descriptor's whole content. */
export function replaceDescriptorContent(fd: number, data: Buffer): void {
  ftruncateSync(fd, 0);
  let written = 0;
  while (written < data.length) written += writeSync(fd, data, written, data.length - written, written);
}
