// Reads a V8 CPU profile (`node --cpu-prof`) and prints the frames with the most self time, and the same
// aggregated by file, so a profile can be read without DevTools.
// Run with: node bench/cpu-profile-top.ts FILE.cpuprofile [--top N] [--match TEXT]
import { readFileSync } from "node:fs";
import { flagValue } from "./bench-results.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per frame and per file, in milliseconds, largest first; `busyMs` leaves out the idle frame. */
export function computeTopFrames(profile: Profile): { frames: [string, number][]; files: [string, number][]; totalMs: number; busyMs: number } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const frames = new Map<string, number>();
  const files = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const f = byId.get(id)!.callFrame;
    if (f.functionName === "(idle)") {
      idle += us / 1000;
      total += us / 1000;
      continue;
    }
    const file = f.url.replace(/^file:\/\/.*?\/(node_modules|src|bench|test)\//, "$1/") || "(native)";
    const key = `${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}`;
    frames.set(key, (frames.get(key) ?? 0) + us / 1000);
    files.set(file, (files.get(file) ?? 0) + us / 1000);
    total += us / 1000;
  }
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  return { frames: sorted(frames), files: sorted(files), totalMs: total, busyMs: total - idle };
}

/** Prints the top self-time frames of CPU profiles and returns them for the record. */
export function printProfileTop(files: readonly string[]): { file: string; totalMs: number; busyMs: number; frames: [string, number][] }[] {
  return files.filter((f) => f.endsWith(".cpuprofile")).map((file) => {
    const top = computeTopFrames(JSON.parse(readFileSync(file, "utf8")));
    const pct = (ms: number) => `${((100 * ms) / top.busyMs).toFixed(1).padStart(5)} %`;
    process.stdout.write(`\n### CPU profile (${file}): ${(top.totalMs / 1000).toFixed(1)} s sampled, ${(top.busyMs / 1000).toFixed(1)} s busy (percentages of busy)\n\n`);
    for (const [k, ms] of top.frames.slice(0, 20)) process.stdout.write(`${pct(ms)}  ${k}\n`);
    process.stdout.write("\nby file:\n");
    for (const [k, ms] of top.files.slice(0, 12)) process.stdout.write(`${pct(ms)}  ${k}\n`);
    return { file, totalMs: Math.round(top.totalMs), busyMs: Math.round(top.busyMs), frames: top.frames.slice(0, 20).map(([k, ms]) => [k, Math.round(ms)] as [string, number]) };
  });
}

if (import.meta.main) {
  const file = process.argv[2];
  if (!file) throw new Error("usage: node bench/cpu-profile-top.ts FILE.cpuprofile [--top N]");
  const top = Number(flagValue("top", "25"));
  const { frames, files, totalMs, busyMs } = computeTopFrames(JSON.parse(readFileSync(file, "utf8")) as Profile);
  const pct = (ms: number) => `${((100 * ms) / busyMs).toFixed(1).padStart(5)} %`;
  process.stdout.write(`${file}: ${(totalMs / 1000).toFixed(1)} s sampled, ${(busyMs / 1000).toFixed(1)} s busy (percentages are of busy time)\n\nself time by frame:\n`);
  for (const [k, ms] of frames.slice(0, top)) process.stdout.write(`${pct(ms)} ${ms.toFixed(0).padStart(7)} ms  ${k}\n`);
  process.stdout.write("\nself time by file:\n");
  for (const [k, ms] of files.slice(0, top)) process.stdout.write(`${pct(ms)} ${ms.toFixed(0).padStart(7)} ms  ${k}\n`);
}
