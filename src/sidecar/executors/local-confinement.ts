// What a standalone shell command may touch. Each command runs in its own PID and mount namespaces (unshare(1),
// in a user namespace when the sidecar is not root), so that:
// - its whole process tree ends with it: when its shell (PID 1 of the namespace) exits or is killed, the kernel
//   kills every process left in the namespace, `setsid` or double-forked ones included;
// - it sees no other process: not the sidecar, not the runtime (/proc is the namespace's own);
// - it sees the filesystem read-only, except its workdir and a private, empty /tmp, with the sidecar's audit
//   directory and secret files hidden, and with no capabilities left (it cannot unmount what hides them).
//   The sidecar's own installation (its package and the Node.js running it) stays readable when it lies under
//   /tmp, as it is anywhere else: a stdio MCP server from the same node_modules then runs wherever it is cloned.
import { spawnSync } from "node:child_process";

/** Where the namespace's new root is built, and what it hides. */
export interface Confinement {
  /** A directory of the sidecar's own (it is covered by a tmpfs inside the namespace, never written). */
  readonly base: string;
  /** The canonical workdir: the one writable place. */
  readonly workdir: string;
  /** Directories and files the command must not see (audit directory, token files). */
  readonly hidden: readonly string[];
  /** Directories under /tmp that stay visible read-only above the private /tmp (the sidecar's installation). */
  readonly visible?: readonly string[];
}

/**
 * Builds the new root in the namespace and runs the command there. Arguments: base, workdir, command, the
 * visible paths (one per line), then the hidden paths. Each mount of the copied tree is remounted read-only one
 * by one (util-linux 2.38 has no recursive read-only bind); a failure of any step stops the command before it runs (`set -e`).
 */
const SETUP = `set -eu
base=$1; workdir=$2; command=$3; visible=$4; shift 4
mount -t tmpfs -o mode=0700 leviath-root "$base"
mkdir "$base/r"
mount --rbind / "$base/r"
findmnt -rno TARGET -R "$base/r" | while read -r mp; do
  mount -o remount,bind,ro "$mp" 2>/dev/null && continue
  # A mount that went away meanwhile needs nothing; any other is covered with an empty read-only one, or we stop.
  findmnt -rno TARGET --mountpoint "$mp" >/dev/null 2>&1 || continue
  if [ -d "$mp" ]; then mount -t tmpfs -o ro,mode=0555 leviath-ro "$mp" && continue
  elif [ -e "$mp" ]; then mount --bind -o ro /dev/null "$mp" && continue; fi
  echo "cannot make $mp read-only" >&2; exit 1
done
mount -t tmpfs -o mode=1777 leviath-tmp "$base/r/tmp"
if [ -n "$visible" ]; then
  printf '%s\n' "$visible" | while IFS= read -r v; do
    [ -d "$v" ] || continue
    mkdir -p "$base/r$v"
    mount --bind "$v" "$base/r$v"
    mount -o remount,bind,ro "$base/r$v"
  done
fi
mkdir -p "$base/r$workdir"
mount --bind "$workdir" "$base/r$workdir"
for p in "$@"; do
  if [ -d "$base/r$p" ]; then mount -t tmpfs -o ro,mode=0 leviath-hidden "$base/r$p"
  elif [ -e "$base/r$p" ]; then mount --bind -o ro /dev/null "$base/r$p"; fi
done
cd /
exec chroot "$base/r" setpriv --bounding-set=-all --inh-caps=-all --no-new-privs /bin/sh -c 'cd "$1" && unset OLDPWD && exec /bin/sh -c "$2"' sh "$workdir" "$command"
`;

/** The argv (after `timeout`) that runs `command` confined. */
export function buildConfinedArgv(c: Confinement, command: string, isRoot: boolean): string[] {
  const user = isRoot ? [] : ["--user", "--map-root-user"];
  return ["unshare", ...user, "--pid", "--fork", "--kill-child", "--mount", "--propagation", "private", "--mount-proc", "/bin/sh", "-c", SETUP, "sh", c.base, c.workdir, command, (c.visible ?? []).join("\n"), ...c.hidden];
}

/** Whether this process runs as root (then no user namespace is needed). */
export function isRootProcess(): boolean {
  return process.getuid?.() === 0;
}

/** Runs `true` confined once: undefined when it works, else why not (the sidecar then refuses to start). */
export function probeConfinement(c: Confinement): string | undefined {
  const [file, ...args] = buildConfinedArgv(c, "true", isRootProcess());
  const r = spawnSync(file!, args, { cwd: c.workdir, encoding: "utf8", timeout: 10_000, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" } });
  if (r.error !== undefined) return `${file}: ${r.error.message}`;
  if (r.status === 0) return undefined;
  return (r.stderr.trim().split("\n").at(-1) ?? "") || `exit ${r.status ?? r.signal}`;
}
