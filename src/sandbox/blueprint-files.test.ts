import { describe, expect, it } from "vitest";
import { BLUEPRINT_FILES_MAX_BYTES, buildBlueprintSnapshotEntries, buildBlueprintVolumeItems, checkBlueprintFiles, readBlueprintSnapshotEntries } from "./blueprint-files.ts";

describe("checkBlueprintFiles", () => {
  it("accepts plain file names within the bound, and pins them under their snapshot keys", () => {
    const r = checkBlueprintFiles("a", "files", { data: { "intro.md": "hi\n", ".hidden": "x" } });
    expect(r).toEqual({ ok: true, files: { ".hidden": "x", "intro.md": "hi\n" } });
    const entries = buildBlueprintSnapshotEntries(r.ok ? r.files : {});
    expect(entries).toEqual({ "blueprint..hidden": "x", "blueprint.intro.md": "hi\n" });
    expect(readBlueprintSnapshotEntries({ ...entries, "run-policy.json": "{}" })).toEqual({ ".hidden": "x", "intro.md": "hi\n" });
    expect(buildBlueprintVolumeItems({ "intro.md": "" })).toEqual([{ key: "blueprint.intro.md", path: "intro.md" }]);
  });

  it("refuses a missing ConfigMap, binaryData, a key that is not a plain file name, and one over the bound, naming Agent and ConfigMap", () => {
    expect(checkBlueprintFiles("a", "files", undefined)).toEqual({ ok: false, message: "Agent 'a': spec.blueprintFiles.configMap 'files' not found in the Agent's namespace; the Run waits until it exists" });
    expect(checkBlueprintFiles("a", "files", { binaryData: { "b.bin": "AA==" } })).toMatchObject({ ok: false, message: expect.stringContaining("binaryData key 'b.bin'") });
    for (const key of ["../x", "a/b", "..", "."]) expect(checkBlueprintFiles("a", "files", { data: { [key]: "" } }), key).toMatchObject({ ok: false, message: expect.stringContaining(`key '${key}' is not a plain file name`) });
    const big = checkBlueprintFiles("a", "files", { data: { "big.md": "x".repeat(BLUEPRINT_FILES_MAX_BYTES) } });
    expect(big).toEqual({ ok: false, message: `Agent 'a': spec.blueprintFiles.configMap 'files' holds ${BLUEPRINT_FILES_MAX_BYTES + 6} bytes; blueprint files may hold at most ${BLUEPRINT_FILES_MAX_BYTES}` });
  });
});
