// What `leviath bound-exec` makes of the sidecar's answer, before it writes or starts anything: the answer parsed
// (api/binding.ts; anything else is refused, nothing written, nothing started), the files a cold engine pod would
// have mounted (runtime.json, each `files` credential's keys under <credentials>/<secretName>/), and the
// environment a cold agent container gets: the image's and the pod's variables, each `env` credential's keys
// over them in the snapshot's order (a later Secret wins, as with the kubelet's `envFrom`), then the variables the
// pod spec sets itself, which `envFrom` never overrides, and the Run's LEVIATH_RUN and LEVIATH_RUNTIME_CONFIG.
import { join } from "node:path";
import { BindingAnswerSchema } from "../api/binding.ts";
import { formatZodIssue } from "../api/sidecar-contract.ts";

/** The variables the engine pod's spec sets on the agent container (sandbox/pods.ts): a credential key never replaces them. */
const POD_SET = ["LEVIATH_NAMESPACE", "HOME", "LEVIATH_SIDECAR_URL", "LEVIATH_SIDECAR_TOKEN_FILE"] as const;

/** What to write and what to start with. */
export interface BindingPlan {
  readonly run: string;
  readonly files: readonly { readonly path: string; readonly bytes: Buffer }[];
  /** Each `files` credential's directory, made read-only once its keys are written. */
  readonly closedDirs: readonly string[];
  readonly env: Record<string, string | undefined>;
  /** What `env` adds to or changes in the environment it was planned from: what a held runtime is sent (api/binding.ts). */
  readonly added: Record<string, string>;
}

/** The plan for a binding answer, or why the answer is refused. */
export function planBinding(body: unknown, at: { runtimeConfig: string; credentialsDir: string }, env: Readonly<Record<string, string | undefined>>): { ok: true; value: BindingPlan } | { ok: false; message: string } {
  const parsed = BindingAnswerSchema.safeParse(body);
  if (!parsed.success) return { ok: false, message: formatZodIssue(parsed.error) };
  const { run, runtimeJson, credentials } = parsed.data;
  try {
    const config: unknown = JSON.parse(runtimeJson);
    if (typeof config !== "object" || config === null || Array.isArray(config)) return { ok: false, message: "runtimeJson is not a JSON object" };
  } catch {
    return { ok: false, message: "runtimeJson is not JSON" };
  }
  const files = [{ path: at.runtimeConfig, bytes: Buffer.from(runtimeJson) }];
  const closedDirs: string[] = [];
  const fromSecrets: Record<string, string> = {};
  for (const c of credentials) {
    if (c.as === "env") {
      for (const [key, value] of Object.entries(c.data)) fromSecrets[key] = Buffer.from(value, "base64").toString("utf8");
      continue;
    }
    const dir = join(at.credentialsDir, c.secretName);
    closedDirs.push(dir);
    for (const [key, value] of Object.entries(c.data)) files.push({ path: join(dir, key), bytes: Buffer.from(value, "base64") });
  }
  const podSet = Object.fromEntries(POD_SET.filter((name) => env[name] !== undefined).map((name) => [name, env[name]]));
  const next = { ...env, ...fromSecrets, ...podSet, LEVIATH_RUN: run, LEVIATH_RUNTIME_CONFIG: at.runtimeConfig };
  const added = Object.fromEntries(Object.entries(next).filter((e): e is [string, string] => e[1] !== undefined && env[e[0]] !== e[1]));
  return { ok: true, value: { run, files, closedDirs, env: next, added } };
}
