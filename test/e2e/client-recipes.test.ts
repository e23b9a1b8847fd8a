// Issue 30, item 2: each client's recipe (images/<kind>/Containerfile, docs/runtimes.md) really built with
// `buildah bud`, unmodified but for its two build arguments (the bases this machine makes instead of pulling them:
// harness/client-recipes.ts), and the image it makes checked: the runtime image's layer unchanged under one layer
// of the client, the entrypoint and PATH the controller relies on, the user of the runtime image, the client
// running inside it as that user, and the same settings as the image scripts/build-images makes for the node.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAUDE_CODE, CODEX, OPENAI_AGENTS, type ClientPackage } from "../clients/install-client.ts";
import {
  buildRecipe, ensureStoreImage, inspectStoreImage, pruneRecipeStore, readArchiveConfig, removeWorkingContainers, runInStoreImage,
} from "./harness/client-recipes.ts";
import { readBuiltImages, type BuiltImage } from "./harness/node-images.ts";

/** What runs the client in its image, and what it must print. */
type Recipe = { client: ClientPackage; path: string; check: string[]; expectRun: (r: { code: number; stdout: string; stderr: string }) => void };

const RECIPES: Recipe[] = [
  {
    client: CLAUDE_CODE, path: "/opt/claude-code/node_modules/.bin", check: ["claude", "--version"],
    expectRun: (r) => expect(r).toMatchObject({ code: 0, stdout: `${CLAUDE_CODE.version} (Claude Code)\n` }),
  },
  {
    client: CODEX, path: "/opt/codex/node_modules/.bin", check: ["codex", "--version"],
    expectRun: (r) => expect(r).toMatchObject({ code: 0, stdout: `codex-cli ${CODEX.version}\n` }),
  },
  {
    // Without a task the program stops at its usage (exit 2), after its imports: an SDK it could not import from
    // /opt/openai-agents/node_modules through the bin/ link would end it with ERR_MODULE_NOT_FOUND first.
    client: OPENAI_AGENTS, path: "/opt/openai-agents/bin", check: [OPENAI_AGENTS.bin],
    expectRun: (r) => {
      expect(r).toMatchObject({ code: 2, stdout: "" });
      // buildah adds a line of its own after the program's: the exit status it saw.
      expect(r.stderr).toMatch(/^openai-agents: usage: agent\.mjs -- <task>\n/);
    },
  },
];

let agent: BuiltImage;
let node: BuiltImage;

describe("the client Containerfiles, built with buildah bud on the runtime image", () => {
  beforeAll(async () => {
    const images = readBuiltImages();
    // The e2e setup's scripts/build-images makes both; without them there is nothing to build on.
    for (const name of ["leviath-agent", "leviath-node"]) {
      if (!images[name]) throw new Error(`no ${name} image: run 'bash scripts/build-images' (as root)`);
    }
    agent = images["leviath-agent"]!;
    node = images["leviath-node"]!;
    await removeWorkingContainers();
    await ensureStoreImage(agent);
    await ensureStoreImage(node);
  }, 600_000);

  afterAll(async () => {
    if (agent && node) await pruneRecipeStore([agent.ref, node.ref]);
  }, 600_000);

  it.each(RECIPES)("images/$client.name/Containerfile builds, and $client.bin runs in the image as its user", async ({ client, path, check, expectRun }) => {
    const started = performance.now();
    const image = await buildRecipe(client.name, { runtime: agent.ref, node: node.ref });
    process.stderr.write(`[client-recipes] buildah bud of images/${client.name}/Containerfile: ${((performance.now() - started) / 1000).toFixed(1)} s\n`);

    const built = await inspectStoreImage(image);
    const runtime = readArchiveConfig(agent.archive);
    // The runtime image's layers byte for byte (the node unpacks them once for every image on them), and one more.
    expect(built.rootfs.diff_ids.slice(0, -1)).toEqual(runtime.rootfs.diff_ids);
    expect(built.rootfs.diff_ids).toHaveLength(runtime.rootfs.diff_ids.length + 1);
    expect(built.config.Entrypoint).toEqual(["leviath", "adapter", client.name]);
    expect(built.config.Env).toContain(`PATH=${path}:/app/bin:/usr/local/bin:/usr/bin:/bin`);
    expect(built.config.User).toBe("65532:65532");
    // The image the node runs in the e2e Runs (scripts/build-images' leviath-<kind>) has the same settings.
    const forNode = readBuiltImages()[`leviath-${client.name}`];
    if (!forNode) throw new Error(`no leviath-${client.name} image: run 'bash scripts/build-images' (as root)`);
    const { Entrypoint, Env, User, WorkingDir } = readArchiveConfig(forNode.archive).config;
    expect({ Entrypoint: built.config.Entrypoint, Env: built.config.Env, User: built.config.User, WorkingDir: built.config.WorkingDir })
      .toEqual({ Entrypoint, Env, User, WorkingDir });

    expectRun(await runInStoreImage(image, check));
    const id = await runInStoreImage(image, ["id", "-u"]);
    expect(id).toMatchObject({ code: 0, stdout: "65532\n" });
    // The entrypoint's program, leviath on the runtime image's Node, names the kind among its adapters.
    const help = await runInStoreImage(image, [...built.config.Entrypoint!, "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(new RegExp(`^Kinds: .*\\b${client.name}\\b`, "m"));
  }, 900_000);
});
