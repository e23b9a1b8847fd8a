// The no-orphan guarantees: whatever ends the process that started the control plane, its components
// die and the throwaway data dir goes.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startComponent, stopComponent } from "./processes.ts";
import { waitFor } from "./wait-for.ts";

const PROCESSES = new URL("./processes.ts", import.meta.url).pathname;

/** Alive means present and not a zombie (an unreaped zombie still answers kill 0). */
function isAlive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** Runs a Node parent that starts a `sleep` component the way the harness does; resolves with both pids. */
async function startParent(dataDir: string, setup: string): Promise<{ parent: ReturnType<typeof spawn>; component: number }> {
  const script = `
    import * as p from ${JSON.stringify(PROCESSES)};
    const dir = ${JSON.stringify(dataDir)};
    const c = p.startComponent("sleeper", "sleep", ["300"], dir, process.env);
    ${setup}
    console.log(c.pid);
    setInterval(() => {}, 1000);
  `;
  const parent = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  const component = await new Promise<number>((resolve, reject) => {
    parent.stdout!.setEncoding("utf8").once("data", (line: string) => resolve(Number(line.trim())));
    parent.once("exit", (code) => reject(new Error(`parent exited early (${code})`)));
  });
  return { parent, component };
}

describe("control-plane processes", () => {
  it("are killed and their data dir removed when the parent is killed with SIGKILL", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "leviath-orphan-test-"));
    const { parent, component } = await startParent(dataDir, "p.startWatchdog(dir, false);");
    expect(isAlive(component)).toBe(true);

    parent.kill("SIGKILL");

    await waitFor(() => !isAlive(component) && !existsSync(dataDir), { timeoutMs: 10_000, description: "the watchdog to clean up" });
  });

  it("are torn down by the signal handler when the parent gets SIGTERM", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "leviath-orphan-test-"));
    const { parent, component } = await startParent(
      dataDir, "p.registerTeardown({ dataDir: dir, pids: () => [c.pid], watchdog: undefined, keepDataDir: false });",
    );
    const exited = new Promise<NodeJS.Signals | null>((resolve) => parent.once("exit", (_code, signal) => resolve(signal)));

    parent.kill("SIGTERM");

    expect(await exited).toBe("SIGTERM");
    expect(existsSync(dataDir)).toBe(false);
    await waitFor(() => !isAlive(component), { timeoutMs: 5_000, description: "the component to die" });
  });

  it("stop the component's whole process group", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "leviath-group-test-"));
    try {
      const component = startComponent(
        "forker", "bash", ["-c", "sleep 300 & echo $!; sleep 300 & echo $!; wait"], dataDir, process.env,
      );
      const log = join(dataDir, "forker.log");
      const children = await waitFor(async () => {
        const pids = (await readFile(log, "utf8")).trim().split("\n").filter(Boolean).map(Number);
        return pids.length === 2 ? pids : undefined;
      }, { timeoutMs: 5_000, description: "the grandchildren's pids" });
      expect(children.every(isAlive)).toBe(true);

      await stopComponent(component);

      expect(component.exit).toBeDefined();
      await waitFor(() => !children.some(isAlive), { timeoutMs: 5_000, description: "the grandchildren to die" });
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
