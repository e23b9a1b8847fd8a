import { describe, expect, it } from "vitest";
import type { KubeClient } from "./client.ts";
import { KubeApiError } from "./errors.ts";
import { formatMicroTime } from "../api/time.ts";
import { createEventRecorder, decideEventWrite, SERIES_EXPIRY_MS, SERIES_FLUSH_MS } from "./event-recorder.ts";

describe("decideEventWrite", () => {
  const seen = { count: 1, writtenCount: 1, lastObservedMs: 1000, lastWriteMs: 1000 };
  it("creates the first occurrence and patches the series at once on the second, as client-go", () => {
    expect(decideEventWrite(undefined, 0)).toBe("create");
    expect(decideEventWrite(seen, 2000)).toBe("patch");
  });
  it("then only counts until the flush interval passed", () => {
    const series = { count: 3, writtenCount: 2, lastObservedMs: 2000, lastWriteMs: 2000 };
    expect(decideEventWrite(series, 2000 + SERIES_FLUSH_MS - 1)).toBe("count");
    expect(decideEventWrite(series, 2000 + SERIES_FLUSH_MS)).toBe("patch");
  });
  it("starts a new Event once a series was not seen for six minutes", () => {
    expect(decideEventWrite(seen, 1000 + SERIES_EXPIRY_MS + 1)).toBe("create");
  });
});

describe("formatMicroTime", () => {
  it("writes microseconds, as MicroTime is serialised", () => {
    expect(formatMicroTime(Date.parse("2026-01-01T00:00:00.123Z"))).toBe("2026-01-01T00:00:00.123000Z");
  });
});

describe("createEventRecorder", () => {
  type Sent = { method: string; path: string; body: Record<string, unknown> };
  function fakeClient(failPatchWith?: number) {
    const sent: Sent[] = [];
    const client = {
      watch: () => Promise.reject(new Error("no watch in this test")),
      async request<T>(method: string, path: string, opts?: { body?: unknown }): Promise<T> {
        sent.push({ method, path, body: opts?.body as Record<string, unknown> });
        if (method === "PATCH" && failPatchWith) throw new KubeApiError(failPatchWith, "NotFound", "gone");
        return {} as T;
      },
    } satisfies KubeClient;
    return { sent, client };
  }
  const run = { apiVersion: "leviath.dev/v1alpha1", kind: "Run", name: "r", namespace: "ns", uid: "u1" };
  const note = { type: "Warning" as const, reason: "FailedCreate", action: "Create", note: "quota" };

  it("creates one Event, patches its series on the repeat, and counts further repeats until the flush", async () => {
    let now = Date.parse("2026-01-01T00:00:00Z");
    const { sent, client } = fakeClient();
    const recorder = createEventRecorder(client, { controller: "leviath-operator", instance: "pod-1", nowMs: () => now, onError: (e) => { throw e; } });
    recorder.record(run, note);
    now += 1000;
    recorder.record(run, note);
    now += 1000;
    recorder.record(run, note);
    await recorder.flush();
    await recorder.stop();
    expect(sent.map((s) => s.method)).toEqual(["POST", "PATCH", "PATCH"]);
    expect(sent[0]!.path).toBe("/apis/events.k8s.io/v1/namespaces/ns/events");
    expect(sent[0]!.body).toMatchObject({ type: "Warning", reason: "FailedCreate", action: "Create", note: "quota", reportingController: "leviath-operator", reportingInstance: "pod-1", regarding: run, eventTime: "2026-01-01T00:00:00.000000Z" });
    const name = (sent[0]!.body["metadata"] as { name: string }).name;
    expect(name).toMatch(/^r\.[0-9a-f]+$/);
    expect(sent[1]!.path).toBe(`/apis/events.k8s.io/v1/namespaces/ns/events/${name}`);
    expect(sent[2]!.body).toEqual({ series: { count: 3, lastObservedTime: "2026-01-01T00:00:02.000000Z" } });
  });

  it("writes a different note as a different Event, and recreates a series whose Event is gone", async () => {
    const { sent, client } = fakeClient(404);
    const recorder = createEventRecorder(client, { controller: "c", instance: "i", nowMs: () => 0, onError: (e) => { throw e; } });
    recorder.record(run, note);
    recorder.record(run, { ...note, note: "other" });
    recorder.record(run, note);
    await recorder.stop();
    expect(sent.map((s) => s.method)).toEqual(["POST", "POST", "PATCH", "POST"]);
    expect(sent[3]!.body).toMatchObject({ note: "quota", series: { count: 2 } });
  });
});
