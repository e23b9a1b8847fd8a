import { describe, expect, it } from "vitest";
import { BLUEPRINT_FILES_MAX_BYTES, buildBlueprintSnapshotEntries, buildBlueprintVolumeItems, checkBlueprintFiles, readBlueprintSnapshotEntries } from "./blueprint-files.ts";

/** A ConfigMap its owner opted in as blueprint files. */
const optedIn = (source: { data?: Record<string, string>; binaryData?: Record<string, string> }) => ({ metadata: { labels: { "leviath.dev/blueprint-files": "true" } }, ...source });

describe("checkBlueprintFiles", () => {
  it("accepts plain file names within the bound, and pins them under their snapshot keys", () => {
    const r = checkBlueprintFiles("a", "files", optedIn({ data: { "intro.md": "hi\n", ".hidden": "x" } }));
    expect(r).toEqual({ ok: true, files: { ".hidden": "x", "intro.md": "hi\n" } });
    const entries = buildBlueprintSnapshotEntries(r.ok ? r.files : {});
    expect(entries).toEqual({ "blueprint..hidden": "x", "blueprint.intro.md": "hi\n" });
    expect(readBlueprintSnapshotEntries({ ...entries, "run-policy.json": "{}" })).toEqual({ ".hidden": "x", "intro.md": "hi\n" });
    expect(buildBlueprintVolumeItems({ "intro.md": "" })).toEqual([{ key: "blueprint.intro.md", path: "intro.md" }]);
  });

  it("refuses a missing ConfigMap, binaryData, a key that is not a plain file name, and one over the bound, naming Agent and ConfigMap", () => {
    expect(checkBlueprintFiles("a", "files", undefined)).toEqual({ ok: false, reason: "BlueprintFilesNotFound", message: "Agent 'a': spec.blueprintFiles.configMap 'files' not found in the Agent's namespace; the Run waits until it exists" });
    expect(checkBlueprintFiles("a", "files", optedIn({ binaryData: { "b.bin": "AA==" } }))).toMatchObject({ ok: false, message: expect.stringContaining("binaryData key 'b.bin'") });
    for (const key of ["../x", "a/b", "..", "."]) expect(checkBlueprintFiles("a", "files", optedIn({ data: { [key]: "" } })), key).toMatchObject({ ok: false, message: expect.stringContaining(`key '${key}' is not a plain file name`) });
    const big = checkBlueprintFiles("a", "files", optedIn({ data: { "big.md": "x".repeat(BLUEPRINT_FILES_MAX_BYTES) } }));
    expect(big).toEqual({ ok: false, reason: "BlueprintFilesInvalid", message: `Agent 'a': spec.blueprintFiles.configMap 'files' holds ${BLUEPRINT_FILES_MAX_BYTES + 6} bytes; blueprint files may hold at most ${BLUEPRINT_FILES_MAX_BYTES}` });
  });

  it("refuses a ConfigMap its owner did not opt in before looking at its keys or size, naming the label", () => {
    const message = `Agent 'a': spec.blueprintFiles.configMap 'team-notes' lacks the label leviath.dev/blueprint-files: "true" (only a ConfigMap its owner opted in is read for an Agent); the Run waits`;
    const cases: (Record<string, string> | undefined)[] = [undefined, {}, { "leviath.dev/blueprint-files": "false" }, { "leviath.dev/credential": "true" }];
    for (const labels of cases) {
      const source = { ...(labels ? { metadata: { labels } } : {}), data: { "../secret": "x".repeat(BLUEPRINT_FILES_MAX_BYTES * 2) } };
      expect(checkBlueprintFiles("a", "team-notes", source)).toEqual({ ok: false, reason: "BlueprintFilesNotOptedIn", message });
    }
  });
});
