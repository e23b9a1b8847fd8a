// A reader that goes away early (`kubectl leviath audit RUN -o json | head -1`) ends the command quietly: no
// stack trace, the exit status the command had, as a Unix filter does.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../integration/harness/control-plane.ts";

/** Runs `bin` with its stdout's reading end closed before it writes a byte; resolves with its exit and stderr. */
function runWithClosedStdout(bin: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(REPO_ROOT, "bin", bin), args, { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stderr }));
  });
}

describe("output to a reader that went away", () => {
  it.each([["kubectl-leviath", ["--help"]], ["leviath", ["--help"]], ["leviath", ["--version"]]])("%s %s ends quietly", async (bin, args) => {
    const { code, stderr } = await runWithClosedStdout(bin, args);
    expect(stderr).toBe("");
    expect(code).toBe(0);
  });
});
