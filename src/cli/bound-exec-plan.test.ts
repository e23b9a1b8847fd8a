import { describe, expect, it } from "vitest";
import { planBinding } from "./bound-exec-plan.ts";

const AT = { runtimeConfig: "/etc/leviath/runtime/runtime.json", credentialsDir: "/var/run/leviath/credentials" };
const b64 = (s: string) => Buffer.from(s).toString("base64");
const ANSWER = {
  run: "r1",
  runtimeJson: '{"run":{"mode":"headless"}}',
  credentials: [
    { secretName: "model-key", as: "env", data: { API_KEY: b64("one"), HOME: b64("/evil") } },
    { secretName: "tls", as: "files", data: { "tls.crt": b64("CERT") } },
    { secretName: "later", as: "env", data: { API_KEY: b64("two") } },
  ],
};
const ENV = { PATH: "/bin", HOME: "/tmp", LEVIATH_SIDECAR_URL: "http://127.0.0.1:8181", API_KEY: "image-default" };

describe("planBinding", () => {
  it("writes runtime.json and the files credentials at a cold pod's paths, and layers the env ones as envFrom would", () => {
    const plan = planBinding(ANSWER, AT, ENV);
    expect(plan.ok).toBe(true);
    if (!plan.ok) return;
    expect(plan.value.files.map((f) => [f.path, f.bytes.toString()])).toEqual([
      ["/etc/leviath/runtime/runtime.json", ANSWER.runtimeJson],
      ["/var/run/leviath/credentials/tls/tls.crt", "CERT"],
    ]);
    expect(plan.value.closedDirs).toEqual(["/var/run/leviath/credentials/tls"]);
    // A later Secret wins over an earlier one and over the image; the pod spec's own HOME is kept.
    expect(plan.value.env).toEqual({ ...ENV, API_KEY: "two", LEVIATH_RUN: "r1", LEVIATH_RUNTIME_CONFIG: AT.runtimeConfig });
    // What a held runtime is sent: only what the binding adds or changes, never the pod's own variables.
    expect(plan.value.added).toEqual({ API_KEY: "two", LEVIATH_RUN: "r1", LEVIATH_RUNTIME_CONFIG: AT.runtimeConfig });
  });

  it.each([
    ["no run", { ...ANSWER, run: undefined }],
    ["a run that is no object name", { ...ANSWER, run: "../r1" }],
    ["runtime.json that is not JSON", { ...ANSWER, runtimeJson: "{run" }],
    ["runtime.json that is no object", { ...ANSWER, runtimeJson: "[1, 2]" }],
    ["a key that climbs out", { ...ANSWER, credentials: [{ secretName: "tls", as: "files", data: { "..": b64("x") } }] }],
    ["a key with a slash", { ...ANSWER, credentials: [{ secretName: "tls", as: "files", data: { "a/b": b64("x") } }] }],
    ["a Secret name with a slash", { ...ANSWER, credentials: [{ secretName: "a/b", as: "files", data: {} }] }],
    ["a value that is not base64", { ...ANSWER, credentials: [{ secretName: "tls", as: "env", data: { K: "not base64!" } }] }],
    ["an unknown way to deliver", { ...ANSWER, credentials: [{ secretName: "tls", as: "stdin", data: {} }] }],
    ["a field nobody asked for", { ...ANSWER, extra: true }],
    ["no answer at all", undefined],
  ])("refuses an answer with %s", (_, body) => {
    expect(planBinding(body, AT, ENV).ok).toBe(false);
  });
});
