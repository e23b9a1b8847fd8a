// Blueprint files in a cluster: the files `blueprint:` seeds read (sandbox-and-blueprint §3.6) ship with the Agent as
// a ConfigMap it names (spec.blueprintFiles.configMap, in its own namespace). The controller copies them into the
// Run's start snapshot `<run>-policy` under BLUEPRINT_KEY_PREFIX, so they are pinned with it (and covered by
// status.snapshotSha256): a later edit of the Agent's ConfigMap does not reach a started Run. The engine pod mounts
// only those keys, read-only, into the sidecar container, as the blueprint directory; never the agent container or
// a sandbox pod. The controller reads the ConfigMap with its own rights and the Run's creator reads the files back
// (a result, an answer), so only a ConfigMap its owner opted in (BLUEPRINT_FILES_OPT_IN) is ever read for an Agent:
// one nobody labelled (the admin's notes, another Run's `<run>-policy`) is refused before anything of it is looked at.
import { LABEL } from "../api/constants.ts";
import { REASON } from "../api/status.ts";

/** Most bytes (keys and values) an Agent's blueprint files may hold: they share the snapshot's 1 MiB ConfigMap. */
export const BLUEPRINT_FILES_MAX_BYTES = 512 * 1024;
/** The prefix of a blueprint file's key in the run's snapshot ConfigMap (`blueprint.<file name>`). */
export const BLUEPRINT_KEY_PREFIX = "blueprint.";
/** The longest file name: a ConfigMap key is at most 253 characters, and the snapshot key carries the prefix. */
const MAX_FILE_NAME = 253 - BLUEPRINT_KEY_PREFIX.length;
/** A plain file name: what a ConfigMap key may be, minus the names that are not a file of the directory. */
const PLAIN_FILE_NAME = /^[-._a-zA-Z0-9]+$/;

/** The label value that opts a ConfigMap in as blueprint files (`leviath.dev/blueprint-files`). */
export const BLUEPRINT_FILES_OPT_IN = "true";

/** The Agent's ConfigMap as read from the API server. */
export interface BlueprintFilesSource {
  readonly metadata?: { readonly labels?: Readonly<Record<string, string>> | undefined } | undefined;
  readonly data?: Readonly<Record<string, string>> | undefined;
  readonly binaryData?: Readonly<Record<string, string>> | undefined;
}

/** The files to pin, or why the ConfigMap cannot be used (the message names the Agent and the ConfigMap). */
export type BlueprintFilesResult = { ok: true; files: Record<string, string> } | { ok: false; reason: BlueprintFilesRefusal; message: string };

/** Why blueprint files cannot be pinned: missing, not opted in, or not valid files. */
export type BlueprintFilesRefusal = typeof REASON.blueprintFilesNotFound | typeof REASON.blueprintFilesNotOptedIn | typeof REASON.blueprintFilesInvalid;

/**
 * Check the Agent's blueprint-files ConfigMap: opted in by its owner (checked first: nothing of a ConfigMap not
 * opted in, not even its keys or size, reaches a message), plain file names, text only, at most
 * {@link BLUEPRINT_FILES_MAX_BYTES}.
 */
export function checkBlueprintFiles(agent: string, configMap: string, source: BlueprintFilesSource | undefined): BlueprintFilesResult {
  const where = `Agent '${agent}': spec.blueprintFiles.configMap '${configMap}'`;
  if (source === undefined) return { ok: false, reason: REASON.blueprintFilesNotFound, message: `${where} not found in the Agent's namespace; the Run waits until it exists` };
  if (source.metadata?.labels?.[LABEL.blueprintFiles] !== BLUEPRINT_FILES_OPT_IN) {
    return {
      ok: false, reason: REASON.blueprintFilesNotOptedIn,
      message: `${where} lacks the label ${LABEL.blueprintFiles}: "${BLUEPRINT_FILES_OPT_IN}" (only a ConfigMap its owner opted in is read for an Agent); the Run waits`,
    };
  }
  const invalid = (message: string): BlueprintFilesResult => ({ ok: false, reason: REASON.blueprintFilesInvalid, message });
  const binary = Object.keys(source.binaryData ?? {});
  if (binary.length > 0) return invalid(`${where}: binaryData key '${binary.sort()[0]}' is not allowed (blueprint files are text, in data)`);
  const files: Record<string, string> = {};
  let bytes = 0;
  for (const name of Object.keys(source.data ?? {}).sort()) {
    if (!PLAIN_FILE_NAME.test(name) || name === "." || name === ".." || name.length > MAX_FILE_NAME) {
      return invalid(`${where}: key '${name}' is not a plain file name (letters, digits, '-', '_', '.'; not '.' or '..'; at most ${MAX_FILE_NAME} characters)`);
    }
    const text = source.data![name]!;
    bytes += Buffer.byteLength(name, "utf8") + Buffer.byteLength(text, "utf8");
    files[name] = text;
  }
  if (bytes > BLUEPRINT_FILES_MAX_BYTES) return invalid(`${where} holds ${bytes} bytes; blueprint files may hold at most ${BLUEPRINT_FILES_MAX_BYTES}`);
  return { ok: true, files };
}

/** The snapshot data entries of pinned blueprint files. */
export function buildBlueprintSnapshotEntries(files: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.keys(files).sort().map((name) => [`${BLUEPRINT_KEY_PREFIX}${name}`, files[name]!]));
}

/** The blueprint files pinned in snapshot data (none: an empty record). */
export function readBlueprintSnapshotEntries(data: Readonly<Record<string, string>> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(data ?? {}).filter(([k]) => k.startsWith(BLUEPRINT_KEY_PREFIX)).map(([k, v]) => [k.slice(BLUEPRINT_KEY_PREFIX.length), v]));
}

/** The configMap volume items that put each pinned file under its own name in the blueprint directory. */
export function buildBlueprintVolumeItems(files: Readonly<Record<string, string>>): { key: string; path: string }[] {
  return Object.keys(files).sort().map((name) => ({ key: `${BLUEPRINT_KEY_PREFIX}${name}`, path: name }));
}
