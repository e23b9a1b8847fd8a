// The client Containerfiles (images/<kind>/Containerfile, docs/runtimes.md) built as a team builds them, with
// `buildah bud`, on bases made here: the runtime image is scripts/build-images' leviath-agent, the build stage's
// Node image its leviath-node (this machine cannot pull node:24-bookworm-slim or a released leviath-agent). Both
// are pulled from their OCI archives into a buildah store of the tests' own (overlay, in the images cache); the
// recipes are built unmodified, only RUNTIME_IMAGE and NODE_IMAGE named as build arguments.
import { execFile, execFileSync } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "../../integration/harness/control-plane.ts";
import { imagesDir, type BuiltImage } from "./node-images.ts";

const run = promisify(execFile);

/** What `buildah inspect --type image` and an OCI image config share: the run settings and the layers. */
export type ImageConfig = {
  config: { Entrypoint?: string[]; Env?: string[]; User?: string; WorkingDir?: string };
  rootfs: { diff_ids: string[] };
};

/** A command's end inside an image: its exit status and output. */
export type RunResult = { code: number; stdout: string; stderr: string };

/** Where the recipes' buildah store lives: beside the images it is built from, kept between runs. */
export function recipeStoreDir(): string {
  return join(imagesDir(), ".recipes");
}

/** The name a recipe's image (or, with `-client`, its build stage) is tagged with in the recipes' store. */
export const recipeImageName = (kind: string, stage = ""): string => `localhost/leviath-recipe-${kind}${stage}`;

/** buildah's arguments for `args` on the recipes' store. */
function storeArgs(args: string[]): string[] {
  const store = recipeStoreDir();
  return ["--storage-driver", "overlay", "--root", join(store, "root"), "--runroot", join(store, "run"), ...args];
}

/**
 * buildah on the recipes' store. Overlay, not the vfs of scripts/build-images: a vfs store copies a whole root fs
 * for every working container and every cached step (a cached rebuild of one recipe took 75 s, a cold one 100 s).
 */
export async function buildah(args: string[], timeoutMs = 600_000): Promise<string> {
  const { stdout } = await run("buildah", storeArgs(args), {
    cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs,
  }).catch((error: unknown) => {
    const e = error as { stderr?: string; stdout?: string };
    throw new Error(`buildah ${args.join(" ")} failed: ${e.stderr || String(error)}\n${(e.stdout ?? "").slice(-4000)}`);
  });
  return stdout;
}

/** The image in the store, pulled from scripts/build-images' archive (named by its ref) unless it is there. */
export async function ensureStoreImage(image: BuiltImage): Promise<void> {
  const present = await buildah(["inspect", "--type", "image", image.ref]).then(() => true, () => false);
  if (!present) await buildah(["pull", "--quiet", `oci-archive:${image.archive}`]);
}

/** Working containers an interrupted build left (the e2e suite runs one file at a time: none is in use). */
export async function removeWorkingContainers(): Promise<void> {
  await buildah(["rm", "--all"]);
}

/**
 * `buildah bud` of images/<kind>/Containerfile, its directory the build context, as the page says, with `--layers`
 * (buildah's own cache: an unchanged step is not run again) and the RUN steps on the host's network (the node's
 * firewall rules are the e2e suite's; npm reaches the registry as this machine does, through leviath-node's
 * configuration). The build stage is built and tagged first, so that a prune keeps its npm install while the
 * Node image is current; the whole recipe then takes that stage from the cache. Returns the image's name.
 */
export async function buildRecipe(kind: string, bases: RecipeBases): Promise<string> {
  const args = buildRecipeBudArgs(kind, bases);
  // The same build up to its build stage, tagged under a name of its own (the last three: -t NAME CONTEXT).
  await buildah([...args.slice(0, -3), "--target", "client", "-t", recipeImageName(kind, "-client"), args.at(-1)!]);
  await buildah(args);
  return recipeImageName(kind);
}

/** The images a recipe is built on: the runtime image (RUNTIME_IMAGE) and the build stage's (NODE_IMAGE). */
export type RecipeBases = { runtime: string; node: string };

/** The `buildah bud` arguments of images/<kind>/Containerfile (paths from the repository's root), as docs/runtimes.md shows them. */
export function buildRecipeBudArgs(kind: string, bases: RecipeBases): string[] {
  return ["bud", "--layers", "--pull=never", "--network", "host", "--build-arg", `RUNTIME_IMAGE=${bases.runtime}`,
    "--build-arg", `NODE_IMAGE=${bases.node}`, "-f", `images/${kind}/Containerfile`, "-t", recipeImageName(kind), `images/${kind}`];
}

/** The image's configuration, as buildah holds it. */
export async function inspectStoreImage(name: string): Promise<ImageConfig> {
  return (JSON.parse(await buildah(["inspect", "--type", "image", name])) as { OCIv1: ImageConfig }).OCIv1;
}

/** The configuration of an OCI archive scripts/build-images wrote (its one manifest's config blob). */
export function readArchiveConfig(archive: string): ImageConfig {
  // --occurrence: tar stops at the member instead of reading the rest of an archive of hundreds of MB.
  const member = (name: string) => JSON.parse(execFileSync("tar", ["-xOf", archive, "--occurrence=1", name], {
    encoding: "utf8", maxBuffer: 16 * 1024 * 1024,
  })) as Record<string, unknown>;
  const blob = (digest: string) => member(`blobs/sha256/${digest.replace(/^sha256:/, "")}`);
  const index = member("index.json") as { manifests: { digest: string }[] };
  const manifest = blob(index.manifests[0]!.digest) as { config: { digest: string } };
  return blob(manifest.config.digest) as ImageConfig;
}

/** Runs `command` in a container of the image (its user, environment and working directory), then removes it. */
export async function runInStoreImage(name: string, command: string[]): Promise<RunResult> {
  const container = (await buildah(["from", "--pull-never", "--quiet", name])).trim();
  try {
    return await run("buildah", storeArgs(["run", container, "--", ...command]), { timeout: 120_000 })
      .then(({ stdout, stderr }) => ({ code: 0, stdout, stderr }))
      .catch((error: { code?: number; stdout?: string; stderr?: string }) => ({ code: typeof error.code === "number" ? error.code : -1, stdout: error.stdout ?? "", stderr: error.stderr ?? "" }));
  } finally {
    await buildah(["rm", container]);
  }
}

/**
 * Drops what no current image needs: until nothing is left to drop, the untagged images nothing is built on (the
 * builds a rebuild replaced, then their steps), then the bases scripts/build-images has since rebuilt (new tags).
 */
export async function pruneRecipeStore(currentBases: string[]): Promise<void> {
  for (let pass = 0; pass < 10; pass++) {
    if ((await buildah(["rmi", "--prune"])).trim() === "") break;
  }
  const tagged = (await buildah(["images", "--format", "{{.Name}}:{{.Tag}}"])).split("\n");
  const stale = tagged.filter((ref) => ref.startsWith("leviath.local/") && !currentBases.includes(ref));
  if (stale.length > 0) await buildah(["rmi", ...stale]);
}
