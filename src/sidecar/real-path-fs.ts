// The filesystem port of the read-path policy (src/policy/read-paths/canonicalize.ts), on the real filesystem.
import { realpathSync, statSync } from "node:fs";
import type { PathFs } from "../policy/read-paths/index.ts";

/** realpath(3), and a directory's device and inode (exact, as bigints) once links are followed. */
export const REAL_PATH_FS: PathFs = {
  realpath: (path) => realpathSync.native(path),
  directoryId(path) {
    try {
      const st = statSync(path, { bigint: true, throwIfNoEntry: false });
      return st?.isDirectory() === true ? `${st.dev}:${st.ino}` : null;
    } catch {
      // ENOTDIR, EACCES, ELOOP, ...: nothing a match can be proved with.
      return null;
    }
  },
};
