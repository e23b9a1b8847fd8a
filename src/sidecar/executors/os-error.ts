// OS errors as upstream prints them: Rust's `io::Error` display is strerror(3) text plus the errno, e.g.
// `No such file or directory (os error 2)`. The model reads these in tool results, so the wording matters.
import { constants } from "node:os";

const STRERROR: Readonly<Record<string, string>> = {
  EPERM: "Operation not permitted",
  ENOENT: "No such file or directory",
  EIO: "Input/output error",
  ENXIO: "No such device or address",
  EBADF: "Bad file descriptor",
  EAGAIN: "Resource temporarily unavailable",
  ENOMEM: "Cannot allocate memory",
  EACCES: "Permission denied",
  EBUSY: "Device or resource busy",
  EEXIST: "File exists",
  ENODEV: "No such device",
  ENOTDIR: "Not a directory",
  EISDIR: "Is a directory",
  EINVAL: "Invalid argument",
  ENFILE: "Too many open files in system",
  EMFILE: "Too many open files",
  ETXTBSY: "Text file busy",
  EFBIG: "File too large",
  ENOSPC: "No space left on device",
  EROFS: "Read-only file system",
  ENAMETOOLONG: "File name too long",
  ENOTEMPTY: "Directory not empty",
  ELOOP: "Too many levels of symbolic links",
  EDQUOT: "Disk quota exceeded",
  ESTALE: "Stale file handle",
};

/** The errno code of a thrown error (`ENOENT`, ...), if it has one. */
export function errnoCode(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}

/** `<strerror> (os error <n>)` for an errno error, else the error's own message. */
export function formatOsError(err: unknown): string {
  const code = errnoCode(err);
  const errno = code === undefined ? undefined : (constants.errno as Record<string, number>)[code];
  const text = code === undefined ? undefined : STRERROR[code];
  if (text !== undefined && errno !== undefined) return `${text} (os error ${errno})`;
  return err instanceof Error ? err.message : String(err);
}
