import { describe, expect, it } from "vitest";
import type { KubeClient } from "../../kube/client.ts";
import { KubeApiError } from "../../kube/errors.ts";
import { computeChunkDigest } from "../storage/audit-digests.ts";
import { createClusterRecords } from "./cluster-records.ts";

const UID = "run-uid-1";
type Stored = { metadata?: Record<string, unknown>; immutable?: boolean; data?: Record<string, string>; status?: Record<string, unknown> };

/**
 * An API server of one namespace in memory: the Run `r` and ConfigMaps by name. GETs fail with `failOn`'s 403; a
 * POST on a taken name is 409, a PATCH of an immutable ConfigMap 422; a status apply merges the status given.
 */
function fakeClient(objects: Record<string, Stored>, failOn?: string): KubeClient & { calls: string[]; objects: Record<string, Stored> } {
  const calls: string[] = [];
  return {
    calls, objects,
    async request<T>(method: string, path: string, opts?: { body?: unknown; contentType?: string }): Promise<T> {
      const parts = path.split("/");
      const status = parts.at(-1) === "status";
      const name = (status ? parts.at(-2) : parts.at(-1))!;
      const body = opts?.body as Stored | undefined;
      calls.push(`${method} ${status ? `${name}/status` : method === "POST" ? (body?.metadata?.["name"] as string) : name}`);
      if (method === "GET") {
        if (name === failOn) throw new KubeApiError(403, "Forbidden", `${name}: forbidden`);
        if (!(name in objects)) throw new KubeApiError(404, "NotFound", `${name}: not found`);
        return objects[name] as T;
      }
      if (method === "POST") {
        const created = body!.metadata!["name"] as string;
        if (created in objects) throw new KubeApiError(409, "AlreadyExists", `${created}: exists`);
        objects[created] = body!;
        return body as T;
      }
      if (method === "DELETE") {
        const finalizers = objects[name]?.metadata?.["finalizers"] as string[] | undefined;
        // A finalizer holds the object (being deleted) until it is cleared.
        if (finalizers !== undefined && finalizers.length > 0) objects[name] = { ...objects[name], metadata: { ...objects[name]?.metadata, deletionTimestamp: "now" } };
        else delete objects[name];
        return {} as T;
      }
      if (opts?.contentType === "application/merge-patch+json") {
        const meta = { ...objects[name]?.metadata };
        delete meta["finalizers"];
        objects[name] = { ...objects[name], metadata: meta };
        return objects[name] as T;
      }
      if (status) {
        objects[name] = { ...objects[name], status: { ...objects[name]?.status, ...body!.status } };
        return objects[name] as T;
      }
      if (objects[name]?.immutable === true) throw new KubeApiError(422, "Invalid", `${name}: field is immutable`);
      objects[name] = { ...objects[name], ...body, data: { ...objects[name]?.data, ...body!.data } };
      return objects[name] as T;
    },
    watch: () => Promise.resolve(),
  };
}

const chunk = (text: string, uid = UID) => ({ metadata: { ownerReferences: [{ uid }] }, data: { "audit.jsonl": text } });
const run = (status: Record<string, unknown> = {}) => ({ metadata: { uid: UID }, status });
const ledger = (...entries: [string, string][]) => ({ audit: { chunks: entries.map(([name, text]) => computeChunkDigest(name, text)) } });

describe("what a restarted sidecar reads back", () => {
  it("continues the last chunk its status.audit records, never one it does not, whoever owns it", async () => {
    const client = fakeClient({
      r: run({ result: { inline: "done", callId: "c1" }, ...ledger(["r-audit-000", "a\n"], ["r-audit-001", "b\n"]) }),
      "r-audit-000": chunk("a\n"), "r-audit-001": chunk("b\n"), "r-audit-031": chunk("x".repeat(800_000)),
    });
    const stored = await createClusterRecords({ client, namespace: "ns", run: "r" }).readStored();
    expect(stored).toMatchObject({ lastChunk: { index: 1, text: "b\n" }, result: { inline: "done", callId: "c1" } });
    expect(stored.ignored).toBeUndefined();
    // One read of the Run, one of the last recorded chunk: no name the ledger does not list is read.
    expect(client.calls).toEqual(["GET r", "GET r-audit-001"]);
  });

  it("drops bytes beyond the record, and goes on after a recorded chunk that was changed or deleted", async () => {
    const longer = fakeClient({ r: run(ledger(["r-audit-000", "a\n"])), "r-audit-000": chunk("a\nforged\n") });
    const grown = await createClusterRecords({ client: longer, namespace: "ns", run: "r" }).readStored();
    expect(grown.lastChunk).toEqual({ index: 0, text: "a\n" });
    expect(grown.ignored).toBe("7 byte(s) at the end of 'r-audit-000' are not in status.audit and are dropped");
    const changed = fakeClient({ r: run(ledger(["r-audit-000", "a\n"])), "r-audit-000": chunk("b\n") });
    expect(await createClusterRecords({ client: changed, namespace: "ns", run: "r" }).readStored()).toMatchObject({ lastChunk: { index: 0, text: undefined }, ignored: "'r-audit-000' does not hold what status.audit records; the audit continues after it" });
    const gone = fakeClient({ r: run(ledger(["r-audit-000", "a\n"])) });
    expect((await createClusterRecords({ client: gone, namespace: "ns", run: "r" }).readStored()).lastChunk).toEqual({ index: 0, text: undefined });
  });

  it("finds nothing for a first start, and fails rather than guess when a read is refused", async () => {
    expect(await createClusterRecords({ client: fakeClient({ r: run() }), namespace: "ns", run: "r" }).readStored()).toEqual({});
    const refused = createClusterRecords({ client: fakeClient({ r: run(ledger(["r-audit-000", "a\n"])) }, "r-audit-000"), namespace: "ns", run: "r" });
    await expect(refused.readStored()).rejects.toThrow("reading the audit ConfigMap 'r-audit-000' failed");
  });

  it("refuses a stored result that is not a result, and a ledger that is not one", async () => {
    const records = createClusterRecords({ client: fakeClient({ r: run({ result: { inline: 42 } }) }), namespace: "ns", run: "r" });
    await expect(records.readStored()).rejects.toThrow("status.result is not a result");
    const bad = createClusterRecords({ client: fakeClient({ r: run({ audit: { chunks: [{ name: "r-audit-000" }] } }) }), namespace: "ns", run: "r" });
    await expect(bad.readStored()).rejects.toThrow("status.audit is not an audit ledger");
  });
});

describe("what the sidecar writes", () => {
  it("creates each audit chunk itself, replacing one planted under its name, and records its digest after each write", async () => {
    const planted = { metadata: { name: "r-audit-000", ownerReferences: [{ uid: UID }], finalizers: ["example.com/hold"] }, immutable: true, data: { "audit.jsonl": "x".repeat(800_000), other: "key" } };
    const client = fakeClient({ r: run(), "r-audit-000": planted });
    const records = createClusterRecords({ client, namespace: "ns", run: "r" });
    await records.readStored();
    await records.writeAuditChunk(0, "a\n");
    expect(client.objects["r-audit-000"]?.data).toEqual({ "audit.jsonl": "a\n" });
    expect(client.objects["r-audit-000"]?.immutable).toBeUndefined();
    expect(client.objects["r"]?.status).toEqual(ledger(["r-audit-000", "a\n"]));
    // Its own chunk is then changed in place.
    await records.writeAuditChunk(0, "a\nb\n");
    expect(client.calls.slice(1)).toEqual(["POST r-audit-000", "PATCH r-audit-000", "DELETE r-audit-000", "POST r-audit-000", "PATCH r/status", "PATCH r-audit-000", "PATCH r/status"]);
    expect(client.objects["r"]?.status).toEqual(ledger(["r-audit-000", "a\nb\n"]));
  });

  it("makes its own chunk again when someone replaced it with one it cannot change", async () => {
    const client = fakeClient({ r: run(ledger(["r-audit-000", "a\n"])), "r-audit-000": chunk("a\n") });
    const records = createClusterRecords({ client, namespace: "ns", run: "r" });
    await records.readStored();
    client.objects["r-audit-000"] = { ...chunk("a\nforged\n"), immutable: true };
    await records.writeAuditChunk(0, "a\nb\n");
    expect(client.objects["r-audit-000"]?.data).toEqual({ "audit.jsonl": "a\nb\n" });
  });

  it("writes the result ConfigMap whole, over one planted under its name", async () => {
    const client = fakeClient({ r: run(), "r-result": { metadata: { name: "r-result" }, immutable: true, data: { result: "forged" } } });
    await createClusterRecords({ client, namespace: "ns", run: "r" }).writeResult("the output");
    expect(client.objects["r-result"]?.data).toEqual({ result: "the output" });
  });
});
