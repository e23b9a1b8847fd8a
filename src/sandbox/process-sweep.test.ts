import { describe, expect, it } from "vitest";
import { buildMarkedCommand, buildSweepCommand, isMarkFailure, MARK_FAILED, MAX_MARKED_SECONDS, PROCESS_SWEEP_SH, SANDBOX_PID1_SCRIPT } from "./process-sweep.ts";

// What the scripts do is proven on the real node (test/e2e/process-tree.test.ts); here, what the sidecar sends.
describe("process-sweep", () => {
  it("marks a command with its slot and deadline, runs it, then sweeps its slot and exits with its status", () => {
    const argv = buildMarkedCommand(7, 36.2, ["timeout", "-s", "KILL", "30", "sh", "-c", "echo 'hi'"]);
    expect(argv.slice(0, 2)).toEqual(["sh", "-c"]);
    expect(argv.slice(3)).toEqual(["leviath-shell", "7", "37", "timeout", "-s", "KILL", "30", "sh", "-c", "echo 'hi'"]);
    // The command never reaches the wrapper's own script: it is an argument, run as `"$@"`.
    expect(argv[2]).toMatch(/>\/proc\/self\/loginuid 2>\/dev\/null \|\|/);
    expect(argv[2]).toContain(PROCESS_SWEEP_SH);
    expect(argv[2]).toMatch(/\n"\$@"\n_rc=\$\?\nsweep "\$_slot" >\/dev\/null 2>&1\nexit "\$_rc"$/);
    expect(buildMarkedCommand(0, 10 ** 9, ["true"])[5]).toBe(String(MAX_MARKED_SECONDS));
  });

  it("tells a marking failure from a command's own exit code 125", () => {
    expect(isMarkFailure(MARK_FAILED.exitCode, MARK_FAILED.stderr)).toBe(true);
    expect(isMarkFailure(125, "")).toBe(false);
    expect(isMarkFailure(0, MARK_FAILED.stderr)).toBe(false);
  });

  it("sweeps the named slots, and PID 1 sweeps on a loop that no signal from inside ends", () => {
    expect(buildSweepCommand([3, 9]).slice(3)).toEqual(["leviath-sweep", "3", "9"]);
    expect(buildSweepCommand([3])[2]).toBe(`${PROCESS_SWEEP_SH}\nsweep "$@" 2>/dev/null`);
    expect(SANDBOX_PID1_SCRIPT.startsWith(PROCESS_SWEEP_SH)).toBe(true);
    // Issue 41: a trap that exits let `kill -TERM 1` from a command end the sandbox's PID 1. No trap runs anything.
    expect(SANDBOX_PID1_SCRIPT).toContain("\ntrap '' HUP INT QUIT TERM USR1 USR2 ALRM PIPE\n");
    expect(SANDBOX_PID1_SCRIPT.match(/trap /g)).toHaveLength(1);
  });

  it("counts a zombie leader whose other threads run on, read from its task list", () => {
    // Issue 41: a main thread that exits leaves the leader a zombie while its threads run (and copy files) on.
    expect(PROCESS_SWEEP_SH).toContain('case $_s in "") continue ;; Z|X)');
    expect(PROCESS_SWEEP_SH).toContain('for _t in "$_d"/task/[0-9]*; do [ "${_t##*/}" != "${_d#/proc/}" ]');
  });
});
