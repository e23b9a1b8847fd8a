import { execFile, execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "../../integration/harness/control-plane.ts";

const run = promisify(execFile);

/** One image scripts/build-images made: its reference (`leviath.local/NAME:TAG`) and OCI archive. */
export type BuiltImage = { name: string; ref: string; archive: string };

/** The images the node cannot run without. */
export const REQUIRED_IMAGES = ["pause", "sandbox"] as const;

/**
 * Images the suite's node does not import at its start: the third-party clients' (each about 0.4-0.5 GB beyond the
 * leviath-agent layer it shares, each run by one test file), imported by the file that runs them (importNodeImage).
 */
export const ON_DEMAND_IMAGES = ["leviath-claude-code", "leviath-codex", "leviath-openai-agents"] as const;

/** Images the node never runs: the client Containerfiles' build stage base (test/e2e/client-recipes.test.ts). */
export const BUILD_ONLY_IMAGES = ["leviath-node"] as const;

/** Where scripts/build-images caches the images (asked once: the script owns the layout). */
export function imagesDir(): string {
  return execFileSync("bash", [join(REPO_ROOT, "scripts/build-images"), "--print-dir"], { encoding: "utf8" }).trim();
}

/** Every image in `dir` (`<name>.json` beside `<name>.oci.tar`), by name. */
export function readBuiltImages(dir: string = imagesDir()): Record<string, BuiltImage> {
  const images: Record<string, BuiltImage> = {};
  if (!existsSync(dir)) return images;
  for (const file of readdirSync(dir)) {
    if (!file.endsWith(".json")) continue;
    const image = JSON.parse(readFileSync(join(dir, file), "utf8")) as BuiltImage;
    if (existsSync(image.archive)) images[image.name] = image;
  }
  return images;
}

/** The built images, failing with the command to run when a required one is missing. */
export function requireBuiltImages(dir: string = imagesDir()): Record<string, BuiltImage> {
  const images = readBuiltImages(dir);
  const missing = REQUIRED_IMAGES.filter((name) => !images[name]);
  if (missing.length > 0) {
    throw new Error(`no ${missing.join(", ")} image in ${dir}: run 'bash scripts/build-images' (as root)`);
  }
  return images;
}

/** Imports OCI archives into containerd's `k8s.io` namespace (the one the CRI plugin reads), unpacked. */
export async function importImages(ctr: string, socket: string, images: BuiltImage[]): Promise<void> {
  for (const image of images) {
    await run(ctr, ["--address", socket, "--namespace", "k8s.io", "images", "import", image.archive], { timeout: 300_000 })
      .catch((error: unknown) => {
        const stderr = (error as { stderr?: string }).stderr ?? String(error);
        throw new Error(`could not import ${image.ref} from ${image.archive}: ${stderr}`);
      });
  }
}
