// What the e2e tests check from inside a running pod's container, with `kubectl exec`: the hardening its
// process holds (/proc/self/status) and that no credential reached it (its first process's environment, the
// credential mount, files under /tmp and /workspace).
import { execInPod } from "./sandbox-pod.ts";

/** A capability set with nothing in it, as /proc/self/status prints it. */
export const NO_CAPABILITIES = "0000000000000000";

/** The `key: value` lines of a /proc status file. */
export function statusFields(text: string): Record<string, string> {
  return Object.fromEntries(text.split("\n").filter((l) => l.includes(":")).map((l) => {
    const [key, ...rest] = l.split(":");
    return [key!.trim(), rest.join(":").trim()];
  }));
}

/** What a process in the container holds: its five capability sets, NoNewPrivs and its four uids. */
export type Hardening = { caps: Record<string, string | undefined>; noNewPrivs: string | undefined; uids: string[] | undefined };

/** The hardening of a process started in `container` of `pod` (its exit code not 0 throws, with its stderr). */
export async function readHardening(namespace: string, pod: string, container: string): Promise<Hardening> {
  const status = await execInPod(namespace, pod, "cat /proc/self/status", container);
  if (status.exitCode !== 0) throw new Error(`cat /proc/self/status in ${pod}/${container}: exit ${status.exitCode}: ${status.stderr}`);
  const f = statusFields(status.stdout);
  return { caps: { eff: f.CapEff, prm: f.CapPrm, inh: f.CapInh, bnd: f.CapBnd, amb: f.CapAmb }, noNewPrivs: f.NoNewPrivs, uids: f.Uid?.split(/\s+/) };
}

/** The hardening every Leviath pod's containers hold: no capability, NoNewPrivs, uid 65532. */
export const HARDENED: Hardening = {
  caps: Object.fromEntries(["eff", "prm", "inh", "bnd", "amb"].map((k) => [k, NO_CAPABILITIES])),
  noNewPrivs: "1",
  uids: ["65532", "65532", "65532", "65532"],
};

/**
 * The traces of credentials in `container` of `pod`, one line each: how many times `envName` is in its first
 * process's environment, whether /var/run/leviath exists, how many mounts name credentials, how many files under
 * /tmp and /workspace hold `fileToken`. None is `["0", "absent", "0", "0"]`.
 */
export async function credentialTraces(namespace: string, pod: string, container: string, envName: string, fileToken: string): Promise<string[]> {
  const r = await execInPod(namespace, pod, `cat /proc/1/environ | tr '\\0' '\\n' | grep -c ${envName}; test -e /var/run/leviath && echo present || echo absent; grep -c credentials /proc/self/mounts; grep -rl ${fileToken} /tmp /workspace 2>/dev/null | wc -l`, container);
  return r.stdout.split("\n").map((l) => l.trim()).filter((l) => l !== "");
}
