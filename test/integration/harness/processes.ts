import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync, rmSync, appendFileSync } from "node:fs";
import { join } from "node:path";

/** How a component process ended. */
export type ExitInfo = { code: number | null; signal: NodeJS.Signals | null };

/** One control-plane process, leader of its own process group, logging to `logPath`. */
export type Component = {
  name: string;
  pid: number;
  logPath: string;
  /** Settles when the process exits, however it exits. */
  exited: Promise<ExitInfo>;
  /** Set once the process has exited. */
  exit: ExitInfo | undefined;
};

/** The file in the data dir that lists the process groups the watchdog must kill. */
const PGID_FILE = ".pgids";

// `setpriv --pdeathsig` makes the kernel kill a component the moment its parent dies, even by SIGKILL.
const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => existsSync(p));

/**
 * Starts `bin args` detached (its own process group, so a Ctrl-C to the test runner does not race our
 * ordered shutdown), with stdout and stderr appended to `<dataDir>/<name>.log`, and records its group
 * for the watchdog.
 */
export function startComponent(name: string, bin: string, args: string[], dataDir: string, env: NodeJS.ProcessEnv): Component {
  const logPath = join(dataDir, `${name}.log`);
  const fd = openSync(logPath, "a");
  const [command, argv] = SETPRIV ? [SETPRIV, ["--pdeathsig", "SIGKILL", "--", bin, ...args]] : [bin, args];
  let child: ChildProcess;
  try {
    child = spawn(command, argv, { detached: true, stdio: ["ignore", fd, fd], env });
  } finally {
    closeSync(fd);
  }
  if (child.pid === undefined) {
    throw new Error(`could not start ${name} (${bin}): see ${logPath}`);
  }
  const component: Component = { name, pid: child.pid, logPath, exited: undefined as never, exit: undefined };
  component.exited = new Promise<ExitInfo>((resolve) => {
    const done = (info: ExitInfo): void => {
      component.exit ??= info;
      resolve(component.exit);
    };
    child.once("exit", (code, signal) => done({ code, signal }));
    child.once("error", (error) => {
      appendFileSync(logPath, `\n[harness] spawn error: ${error.message}\n`);
      done({ code: 127, signal: null });
    });
  });
  appendFileSync(join(dataDir, PGID_FILE), `${child.pid}\n`);
  return component;
}

/** Sends `signal` to the component's whole process group; a group that is already gone is fine. */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: already exited.
  }
}

/** Stops a component: SIGTERM to its group, SIGKILL if it is still there after `graceMs`. */
export async function stopComponent(component: Component, graceMs = 5_000): Promise<void> {
  if (component.exit) {
    signalGroup(component.pid, "SIGKILL");
    return;
  }
  signalGroup(component.pid, "SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), graceMs);
  });
  const result = await Promise.race([component.exited, timedOut]);
  clearTimeout(timer);
  // Children a component forked (none today) die with the group either way.
  signalGroup(component.pid, "SIGKILL");
  if (result === "timeout") {
    await component.exited;
  }
}

/** The last `lines` lines of a component's log, for error messages. */
export function logTail(logPath: string, lines = 40): string {
  try {
    const text = readFileSync(logPath, "utf8").trimEnd().split("\n");
    return text.slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

// The watchdog outlives a parent killed with SIGKILL (where no exit handler runs): it polls the parent's
// pid and then kills every recorded process group and removes the data dir. `$0` is the parent pid.
const WATCHDOG = `
dir="$1"; keep="$2"
while kill -0 "$0" 2>/dev/null && [ -d "$dir" ]; do sleep 1; done
[ -f "$dir/${PGID_FILE}" ] || exit 0
while read -r pg; do kill -KILL -- "-$pg" 2>/dev/null; done < "$dir/${PGID_FILE}"
[ "$keep" = keep ] || rm -rf -- "$dir"
`;

/** Starts the watchdog for `dataDir`; it exits by itself once the data dir is removed by a normal stop. */
export function startWatchdog(dataDir: string, keepDataDir: boolean): number | undefined {
  const child = spawn("bash", ["-c", WATCHDOG, String(process.pid), dataDir, keepDataDir ? "keep" : "remove"], {
    detached: true,
    stdio: "ignore",
  });
  child.unref();
  return child.pid;
}

/** What the exit handlers need to tear one control plane down synchronously. */
export type Teardown = { dataDir: string; pids: () => number[]; watchdog: number | undefined; keepDataDir: boolean };

const live = new Set<Teardown>();
let handlersInstalled = false;

/** Tears down synchronously: used from `exit` and signal handlers, where nothing async runs any more. */
export function teardownNow(t: Teardown): void {
  for (const pid of t.pids()) {
    signalGroup(pid, "SIGKILL");
  }
  if (t.watchdog !== undefined) {
    signalGroup(t.watchdog, "SIGKILL");
  }
  if (!t.keepDataDir) {
    rmSync(t.dataDir, { recursive: true, force: true });
  }
  live.delete(t);
}

/**
 * Makes sure `t` is torn down when this process exits or is interrupted (SIGINT, SIGTERM, SIGHUP) before
 * the normal stop runs. Returns the function that forgets it again after a normal stop.
 */
export function registerTeardown(t: Teardown): () => void {
  live.add(t);
  if (!handlersInstalled) {
    handlersInstalled = true;
    process.on("exit", () => {
      for (const each of [...live]) teardownNow(each);
    });
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
      const onSignal = (): void => {
        for (const each of [...live]) teardownNow(each);
        // Alone on this signal, we must still end the process the way the signal would have.
        if (process.listenerCount(signal) === 1) {
          process.off(signal, onSignal);
          process.kill(process.pid, signal);
        }
      };
      process.on(signal, onSignal);
    }
  }
  return () => live.delete(t);
}
