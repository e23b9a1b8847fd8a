// Real trees on disk for the decision benchmarks: the sidecar's small tree (a workdir five levels deep, a home
// with granted and declared-only entries) and a large one of many projects, each reachable through one read-path
// entry, in the order exact, glob, regex, exact, ...
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The sidecar's tree: a workdir five levels deep, a home with granted and declared-only trees, and its config. */
export interface SidecarTree {
  readonly root: string;
  readonly work: string;
  readonly home: string;
  readonly deep: string;
}

/** Builds the sidecar's small tree and its `agent.leviath` and `config.toml`. */
export function buildSidecarTree(): SidecarTree {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "leviath-bench-")));
  const work = join(root, "work");
  const home = join(root, "home");
  const deep = join(work, "src", "app", "lib", "core");
  mkdirSync(deep, { recursive: true });
  mkdirSync(join(home, "docs", "design", "2026"), { recursive: true });
  mkdirSync(join(home, "projects", "a", "notes"), { recursive: true });
  mkdirSync(join(home, "private"), { recursive: true });
  writeFileSync(join(deep, "index.ts"), "export {};\n".repeat(50));
  writeFileSync(join(home, "docs", "design", "2026", "plan.md"), "# plan\n".repeat(50));
  writeFileSync(join(home, "projects", "a", "notes", "n.md"), "note\n");
  writeFileSync(join(home, "private", "key"), "k\n");
  writeFileSync(join(root, "agent.leviath"), "[agent]\nname = 'bench'\n[read_paths]\nallow = ['~/docs', 'glob:~/projects/**/*.md', 'regex:~/private/.*']\n[security]\ntaint_tracking = true\n");
  writeFileSync(join(root, "config.toml"), "[tool_permissions]\nshell = 'allow'\nhttp_post = 'allow'\n[agent_read_paths.bench]\nallow = ['~/docs', 'glob:~/projects/**/*.md']\n");
  return { root, work, home, deep };
}

/** A tree of `projects` project directories under a home, and one read-path entry per project. */
export interface EntryTree {
  readonly root: string;
  readonly work: string;
  readonly home: string;
  /** One entry per project, kinds rotating exact, glob, regex. */
  readonly entries: readonly string[];
  /** Every file under the projects, absolute, in a fixed shuffled order. */
  readonly files: readonly string[];
  /** Files under `home/other`, which no entry declares. */
  readonly undeclared: readonly string[];
  /** How many entries of each kind. */
  readonly kinds: { exact: number; glob: number; regex: number };
}

const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** A small deterministic PRNG (mulberry32), so every run shuffles the requests the same way. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Builds `projects` directories `home/pNNNN/src/mM/fK.md` (`dirsPerProject` × `filesPerDir` files each) and an
 * undeclared `home/other`. Entry i is `~/pNNNN` (exact), `glob:~/pNNNN/**\/*.md` or
 * `regex:~/pNNNN/src/m[0-9]+/f[0-9]+\.md`, by i mod 3.
 */
export function buildEntryTree(projects: number, dirsPerProject: number, filesPerDir: number): EntryTree {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "leviath-bench-entries-")));
  const work = join(root, "work");
  const home = join(root, "home");
  mkdirSync(join(work, "src"), { recursive: true });
  const width = Math.max(2, String(projects - 1).length);
  const entries: string[] = [];
  const files: string[] = [];
  const kinds = { exact: 0, glob: 0, regex: 0 };
  for (let p = 0; p < projects; p++) {
    const name = `p${pad(p, width)}`;
    for (let m = 0; m < dirsPerProject; m++) {
      const dir = join(home, name, "src", `m${m}`);
      mkdirSync(dir, { recursive: true });
      for (let f = 0; f < filesPerDir; f++) {
        const file = join(dir, `f${pad(f, 2)}.md`);
        writeFileSync(file, `${name} ${m} ${f}\n`);
        files.push(file);
      }
    }
    if (p % 3 === 0) {
      entries.push(`~/${name}`);
      kinds.exact++;
    } else if (p % 3 === 1) {
      entries.push(`glob:~/${name}/**/*.md`);
      kinds.glob++;
    } else {
      entries.push(`regex:~/${name}/src/m[0-9]+/f[0-9]+\\.md`);
      kinds.regex++;
    }
  }
  const undeclared: string[] = [];
  mkdirSync(join(home, "other", "notes"), { recursive: true });
  for (let f = 0; f < 20; f++) {
    const file = join(home, "other", "notes", `n${pad(f, 2)}.md`);
    writeFileSync(file, "other\n");
    undeclared.push(file);
  }
  const random = seededRandom(7);
  for (let i = files.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [files[i], files[j]] = [files[j]!, files[i]!];
  }
  return { root, work, home, entries, files, undeclared, kinds };
}
