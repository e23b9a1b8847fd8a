// `leviath adapter <kind>` as the engine pod starts it, for the CLI and integration suites: a process in the workdir,
// HOME its own scratch directory, the sidecar's address and token file in its environment, the client on its PATH;
// and what the client sent the scripted model server.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll } from "vitest";
import { ensureClient, type ClientPackage } from "../clients/install-client.ts";
import type { ScriptedModelServer } from "../../src/model-server/scripted-model-server.ts";
import { useAgentParts } from "./agent-process.ts";
import { repo } from "./run-cli.ts";
import type { SidecarProcess } from "./sidecar-harness.ts";

/** Where one adapter run works: its runtime.json, workdir, HOME, and the directory its termination log goes to. */
export interface AdapterTree {
  readonly dir: string;
  readonly work: string;
  readonly home: string;
  readonly runtimeConfig: string;
}

/** How the adapter ended. */
export interface AdapterExit { code: number | null; stdout: string; stderr: string; termination: string }

/** Runs `leviath adapter <kind>` against the sidecar and the model server, with `path` as its PATH. */
export function runAdapter(kind: string, tree: AdapterTree, parts: { sc: SidecarProcess; model: ScriptedModelServer; path: string; sigtermWhen?: Promise<unknown>; env?: Record<string, string>; args?: string[] }): Promise<AdapterExit> {
  const termination = join(tree.dir, "termination-log");
  const proc = spawn(process.execPath, [repo("bin/leviath"), "adapter", kind, "--runtime-config", tree.runtimeConfig, "--termination-log", termination, "--credentials-dir", join(tree.dir, "no-credentials"), ...(parts.args ?? [])], {
    cwd: tree.work,
    env: {
      PATH: parts.path, HOME: tree.home, LEVIATH_SIDECAR_URL: parts.sc.url, LEVIATH_SIDECAR_TOKEN_FILE: parts.sc.runtimeTokenFile,
      ANTHROPIC_API_KEY: "sk-ant-scripted", ANTHROPIC_BASE_URL: parts.model.url, OPENAI_API_KEY: "sk-test-key", OPENAI_BASE_URL: `${parts.model.url}/v1`, ...parts.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  void parts.sigtermWhen?.then(() => proc.kill("SIGTERM"));
  const read = () => { try { return readFileSync(termination, "utf8"); } catch { return ""; } };
  return new Promise((resolve) => proc.once("exit", (code) => resolve({ code, stdout, stderr, termination: read() })));
}

/** The tool_result blocks a client sent the model in request `n` (its last user message; Anthropic's protocol). */
export function toolResults(model: Pick<ScriptedModelServer, "requests">, n: number): { tool_use_id: string; content: unknown; is_error?: boolean }[] {
  const messages = model.requests[n]!.body["messages"] as { content: { type: string; tool_use_id: string; content: unknown; is_error?: boolean }[] | string }[];
  const last = messages.at(-1)!.content;
  return typeof last === "string" ? [] : last.filter((b) => b.type === "tool_result");
}

/** A tool result's text, whichever form the client gives it (a string, or text blocks). */
export const textOf = (content: unknown): string => (typeof content === "string" ? content : (content as { text: string }[]).map((b) => b.text).join(""));

/** The tool names offered in each request the model server got. */
export const offeredTools = (model: ScriptedModelServer): string[][] => model.requests.map((q) => ((q.body["tools"] ?? []) as { name: string }[]).map((t) => t.name).sort());

/** What a test of a client shares: the client's bin directory (installed once before the suite), and the sidecar and model server of the current test, stopped after each. */
export interface ClientParts { bin: string; sc?: SidecarProcess; model?: ScriptedModelServer }

/** Installs `client` (once, cached) before the suite; each test's sidecar and model server are stopped after it. */
export function useClientParts(client: ClientPackage): ClientParts {
  const parts: ClientParts = Object.assign(useAgentParts(), { bin: "" });
  beforeAll(() => {
    parts.bin = ensureClient(client);
  }, 600_000);
  return parts;
}
