// The peers' binaries for the peers suite: scripts/peers-bin builds what is missing (from the Go module proxy, at
// pinned versions, cached under ~/.cache/leviath/peers) and prints where each one is.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { ROOT } from "./bench-results.ts";

/** Where the peers are, and their versions. */
export interface PeerBinaries {
  readonly opa: string;
  readonly opaVersion: string;
  readonly agentSandbox: string;
  readonly agentSandboxVersion: string;
  /** The Sandbox CRD from the same agent-sandbox module version. */
  readonly sandboxCrd: string;
  /** Our Go net/http floor (bench/peers/go-floor). */
  readonly goFloor: string;
}

/** Builds (once) and locates the peers; throws with the script's own words when it fails. */
export function buildPeers(): PeerBinaries {
  const r = spawnSync("bash", [join(ROOT, "scripts/peers-bin")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (r.status !== 0) throw new Error("scripts/peers-bin failed (its output is above): the peers suite needs OPA, agent-sandbox and the Go floor");
  const out = Object.fromEntries(r.stdout.trim().split("\n").map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]));
  const need = (key: string) => {
    const v = out[key];
    if (!v) throw new Error(`scripts/peers-bin printed no ${key}=`);
    return v;
  };
  return {
    opa: need("opa"), opaVersion: need("opa_version"), agentSandbox: need("agent_sandbox"), agentSandboxVersion: need("agent_sandbox_version"),
    sandboxCrd: need("sandbox_crd"), goFloor: need("go_floor"),
  };
}
