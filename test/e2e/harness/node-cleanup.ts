import { execFileSync, spawn } from "node:child_process";
import { NETPOL_CLEANUP, NETPOL_LOCK } from "./network-policy.ts";

/** What one node leaves on the machine outside its processes, for {@link cleanUpNode} and its watchdog. */
export type NodeResources = {
  dataDir: string;
  /** The kubelet's cgroup root, e.g. `/leviath-node-ab12cd`: every pod process lives below it. */
  cgroupRoot: string;
  containerdSocket: string;
  bridge: string;
  /** The NAT chain that forwards the `kubernetes` Service to the API server. */
  natChain: string;
  /** The CNI network name (its cache entries in /var/lib/cni are named after it). */
  cniNetwork: string;
  keepDataDir: boolean;
  /** This node ran kube-router's firewall: its chains and ipsets go too (unless another node holds the lock by then). */
  networkPolicy: boolean;
};

// Tears a node down in the order that leaves nothing behind, and never touches what is not ours:
//  1. the pod processes (everything in our cgroup root, in every v1 hierarchy), after noting the network
//     namespaces they are in; the shims of our containerd (found by its socket in their command line);
//  2. the network namespaces those processes were in (containerd 1.6 bind-mounts them in /var/run/netns);
//  3. every mount under the data dir (container root fs overlays, tmpfs of secret/projected volumes),
//     deepest first; 4. our cgroups, bottom up; 5. the NAT chain and the bridge; 6. our CNI cache entries;
//  7. kube-router's chains and ipsets, if this node ran it and no other node took the lock since; 8. the
//  data dir, unless kept. `$0` is the data dir, then the fields of NodeResources in order.
const CLEANUP = `
dir="$0"; cgroot="$1"; sock="$2"; bridge="$3"; chain="$4"; cninet="$5"; keep="$6"; netpol="$7"
[ -n "$cgroot" ] && [ "$cgroot" != / ] || exit 2
cg_dirs() { for h in /sys/fs/cgroup/*/; do [ -d "$h\${cgroot#/}" ] && echo "$h\${cgroot#/}"; done; }
cg_pids() { for d in $(cg_dirs); do find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null; done | sort -u; }
host_ns="$(stat -L -c %i /proc/1/ns/net 2>/dev/null)"
netns=""
for pid in $(cg_pids); do
  ino="$(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null)" || continue
  [ "$ino" = "$host_ns" ] || netns="$netns $ino"
done
for i in 1 2 3 4 5 6 7 8 9 10; do
  pids="$(cg_pids)"
  [ -n "$pids" ] || break
  kill -KILL $pids 2>/dev/null
  sleep 0.3
done
for p in /proc/[0-9]*; do
  cmd="$(tr '\\0' ' ' < "$p/cmdline" 2>/dev/null)" || continue
  case "$cmd" in
    *containerd-shim*"-address $sock "*)
      kill -KILL "\${p#/proc/}" 2>/dev/null
      # containerd 1.6 names a shim's socket after sha256(<containerd socket>/<namespace>/<id>).
      id="$(echo "$cmd" | sed -n 's/.* -id \\([^ ]*\\) .*/\\1/p')"
      [ -n "$id" ] && rm -f "/run/containerd/s/$(printf '%s' "$sock/k8s.io/$id" | sha256sum | cut -c1-64)"
      ;;
  esac
done
for f in /var/run/netns/*; do
  [ -e "$f" ] || continue
  ino="$(stat -L -c %i "$f" 2>/dev/null)" || continue
  case " $netns " in *" $ino "*) umount "$f" 2>/dev/null || umount -l "$f" 2>/dev/null; rm -f "$f" ;; esac
done
awk '{print $5}' /proc/self/mountinfo | grep -F "$dir/" | grep "^$dir/" | awk '{print length, $0}' | sort -rn | cut -d' ' -f2- |
  while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
for d in $(cg_dirs); do find "$d" -depth -type d -exec rmdir {} \\; 2>/dev/null; done
if iptables -t nat -n -L "$chain" >/dev/null 2>&1; then
  iptables -t nat -D PREROUTING -i "$bridge" -j "$chain" 2>/dev/null
  iptables -t nat -F "$chain" && iptables -t nat -X "$chain"
fi
ip link show "$bridge" >/dev/null 2>&1 && ip link del "$bridge"
# runc's state of our containers (the shims that would have deleted it are gone): its root fs is ours.
for state in /run/containerd/runc/*/*/state.json; do
  [ -f "$state" ] && grep -qF "$dir/" "$state" && rm -rf -- "\${state%/state.json}"
done
# libcni's cache entries are named <network>-<sandbox id>-<interface>; our sandbox ids are in our log.
rm -f /var/lib/cni/results/"$cninet"-* 2>/dev/null
for id in $(grep -h "returns sandbox id" "$dir/containerd.log" 2>/dev/null | grep -oE '[0-9a-f]{64}' | sort -u); do
  rm -f /var/lib/cni/results/*-"$id"-* 2>/dev/null
done
if [ "$netpol" = netpol ]; then
  flock -n ${NETPOL_LOCK} bash -c "$NETPOL_CLEANUP" 2>/dev/null
fi
[ "$keep" = keep ] || rm -rf -- "$dir"
exit 0
`;

function cleanupArgs(r: NodeResources): string[] {
  return [r.dataDir, r.cgroupRoot, r.containerdSocket, r.bridge, r.natChain, r.cniNetwork, r.keepDataDir ? "keep" : "remove", r.networkPolicy ? "netpol" : ""];
}

/** Runs the teardown synchronously (processes already signalled or not: it kills what is left). */
export function cleanUpNode(resources: NodeResources): void {
  execFileSync("bash", ["-c", CLEANUP, ...cleanupArgs(resources)], { stdio: "ignore", timeout: 60_000, env: { ...process.env, NETPOL_CLEANUP } });
}

/**
 * Starts a detached watchdog that waits for this process to die (however it dies: SIGKILL runs no
 * handler), then kills the recorded process groups (`<data dir>/.pgids`) and runs the teardown. A normal
 * stop kills the watchdog first. Returns its pid.
 */
export function startNodeWatchdog(resources: NodeResources): number | undefined {
  const script = `
parent="$1"; shift
while kill -0 "$parent" 2>/dev/null && [ -d "$1" ]; do sleep 1; done
[ -d "$1" ] || exit 0
if [ -f "$1/.pgids" ]; then while read -r pg; do kill -KILL -- "-$pg" 2>/dev/null; done < "$1/.pgids"; fi
exec bash -c "$CLEANUP_SCRIPT" "$@"
`;
  const child = spawn("bash", ["-c", script, "watchdog", String(process.pid), ...cleanupArgs(resources)], {
    detached: true,
    stdio: "ignore",
    env: { ...process.env, CLEANUP_SCRIPT: CLEANUP, NETPOL_CLEANUP },
  });
  child.unref();
  return child.pid;
}
