import { describe, expect, it } from "vitest";
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { createClusterRecords } from "./cluster-records.ts";

const UID = "run-uid-1";

/** A client that serves the Run and the ConfigMaps given by name; anything else is 404 (or `failOn`'s error). */
function fakeClient(objects: Record<string, unknown>, failOn?: string): KubeClient & { gets: string[] } {
  const gets: string[] = [];
  return {
    gets,
    async request<T>(method: string, path: string): Promise<T> {
      const name = path.split("/").pop()!;
      gets.push(name);
      if (method !== "GET") throw new Error(`unexpected ${method}`);
      if (name === failOn) throw new KubeApiError(403, "Forbidden", `${name}: forbidden`);
      if (!(name in objects)) throw new KubeApiError(404, "NotFound", `${name}: not found`);
      return objects[name] as T;
    },
    watch: () => Promise.resolve(),
  };
}

const chunk = (text: string, uid = UID) => ({ metadata: { ownerReferences: [{ uid }] }, data: { "audit.jsonl": text } });
const run = (result?: unknown) => ({ metadata: { uid: UID }, ...(result === undefined ? {} : { status: { result } }) });

describe("what a restarted sidecar reads back", () => {
  it("finds the highest audit ConfigMap its Run owns, past a gap, ignoring one planted under a later name", async () => {
    const client = fakeClient({ r: run({ inline: "done", callId: "c1" }), "r-audit-000": chunk("a\n"), "r-audit-002": chunk("c\n"), "r-audit-005": chunk("x\n", "other-uid") });
    const stored = await createClusterRecords({ client, namespace: "ns", run: "r" }).readStored();
    expect(stored).toEqual({ lastChunk: { index: 2, text: "c\n" }, result: { inline: "done", callId: "c1" } });
  });

  it("finds nothing for a first start, and fails rather than guess when a read is refused", async () => {
    expect(await createClusterRecords({ client: fakeClient({ r: run() }), namespace: "ns", run: "r" }).readStored()).toEqual({});
    const refused = createClusterRecords({ client: fakeClient({ r: run() }, "r-audit-031"), namespace: "ns", run: "r" });
    await expect(refused.readStored()).rejects.toThrow("reading the audit ConfigMap 'r-audit-031' failed");
  });

  it("refuses a stored result that is not a result", async () => {
    const records = createClusterRecords({ client: fakeClient({ r: run({ inline: 42 }) }), namespace: "ns", run: "r" });
    await expect(records.readStored()).rejects.toThrow("status.result is not a result");
  });
});
