// `leviath agent` as a process beside a standalone sidecar and the scripted model server, for the CLI suites:
// its exit code, its output and its termination message.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach } from "vitest";
import type { ScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";
import { repo } from "./run-cli.ts";
import type { SidecarProcess } from "./sidecar-harness.ts";

/** How the process ended. */
export interface AgentExit { code: number | null; stdout: string; stderr: string; termination: string }

/** Runs `leviath agent` on `runtimeConfig`, writing its termination log in `dir`. */
export function runAgentProcess(dir: string, runtimeConfig: string, sc: SidecarProcess, model: ScriptedModelServer, extra: string[] = [], env: Record<string, string> = {}): Promise<AgentExit> {
  const termination = join(dir, "termination-log");
  const proc = spawn(process.execPath, [repo("bin/leviath"), "agent", "--runtime-config", runtimeConfig, "--termination-log", termination, "--credentials-dir", join(dir, "no-credentials"), ...extra], {
    env: { ...process.env, LEVIATH_SIDECAR_URL: sc.url, LEVIATH_SIDECAR_TOKEN_FILE: sc.runtimeTokenFile, ANTHROPIC_API_KEY: "sk-ant-scripted", ANTHROPIC_BASE_URL: model.url, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => proc.once("exit", (code) => resolve({ code, stdout, stderr, termination: readFileSync(termination, "utf8") })));
}

/** The sidecar and model server of the current test, stopped after each test. */
export function useAgentParts(): { sc?: SidecarProcess; model?: ScriptedModelServer } {
  const parts: { sc?: SidecarProcess; model?: ScriptedModelServer } = {};
  afterEach(async () => {
    await parts.sc?.stop();
    await parts.model?.close();
    delete parts.sc;
    delete parts.model;
  });
  return parts;
}
