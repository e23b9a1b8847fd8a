import { spawn } from "node:child_process";
import type { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { BINDING_FD_ENV, HELD_BINDING_MAX_BYTES } from "../api/binding.ts";
import { applyHeldBinding, parseHeldBinding, readBindingFd } from "./held-binding.ts";

describe("parseHeldBinding", () => {
  it("takes the Run and the variables bound-exec sends", () => {
    expect(parseHeldBinding(JSON.stringify({ run: "r1", env: { LEVIATH_RUN: "r1", API_KEY: "k" } }))).toEqual({ ok: true, value: { run: "r1", env: { LEVIATH_RUN: "r1", API_KEY: "k" } } });
  });

  it.each([
    ["nothing (the pipe closed empty: no binding)", "", "nothing written"],
    ["only white space", " \n", "nothing written"],
    ["no JSON", "{run", "not JSON"],
    ["no run", JSON.stringify({ env: {} }), "malformed"],
    ["a run that is no object name", JSON.stringify({ run: "../r1", env: {} }), "malformed"],
    ["a variable name with '='", JSON.stringify({ run: "r1", env: { "A=B": "x" } }), "malformed"],
    ["a value with a NUL", JSON.stringify({ run: "r1", env: { A: "x\u0000y" } }), "malformed"],
    ["a field nobody asked for", JSON.stringify({ run: "r1", env: {}, runtimeJson: "{}" }), "malformed"],
    ["two documents", `${JSON.stringify({ run: "r1", env: {} })}${JSON.stringify({ run: "r2", env: {} })}`, "not JSON"],
  ])("refuses %s", (_, text, why) => {
    const read = parseHeldBinding(text);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.message).toContain(why);
  });
});

describe("readBindingFd", () => {
  it("is undefined without the variable, the descriptor with it, and an error for stdio or anything else", () => {
    expect(readBindingFd({})).toBeUndefined();
    expect(readBindingFd({ [BINDING_FD_ENV]: "3" })).toBe(3);
    for (const bad of ["0", "2", "-1", "3x", ""]) expect(readBindingFd({ [BINDING_FD_ENV]: bad })).toBeInstanceOf(Error);
  });
});

describe("applyHeldBinding", () => {
  it("adds the binding's variables and drops LEVIATH_BINDING_FD, in what it returns and in process.env", () => {
    process.env[BINDING_FD_ENV] = "3";
    try {
      const next = applyHeldBinding({ PATH: "/bin", [BINDING_FD_ENV]: "3", HOME: "/tmp" }, { run: "r1", env: { LEVIATH_RUN: "r1", LEVIATH_HELD_TEST_KEY: "k" } });
      expect(next).toEqual({ PATH: "/bin", HOME: "/tmp", LEVIATH_RUN: "r1", LEVIATH_HELD_TEST_KEY: "k" });
      expect(process.env[BINDING_FD_ENV]).toBeUndefined();
      expect(process.env["LEVIATH_HELD_TEST_KEY"]).toBe("k");
    } finally {
      delete process.env["LEVIATH_HELD_TEST_KEY"];
      delete process.env["LEVIATH_RUN"];
    }
  });
});

/** Runs readHeldBinding (held-binding.ts) in a child whose descriptor 3 is a pipe this test writes `chunks` to, then closes. */
async function readThroughPipe(chunks: readonly (string | Buffer)[]): Promise<unknown> {
  const code = `import(${JSON.stringify(new URL("./held-binding.ts", import.meta.url).href)}).then(async (m) => process.stdout.write(JSON.stringify(await m.readHeldBinding(3))))`;
  const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  const pipe = child.stdio[3] as Writable;
  // The reader stops at its cap: the rest of a write too large fails, which is the point.
  pipe.on("error", () => undefined);
  for (const chunk of chunks) pipe.write(chunk);
  pipe.end();
  await new Promise((resolve) => child.once("exit", resolve));
  return JSON.parse(out);
}

describe("readHeldBinding", () => {
  it("reads the pipe to its end, across chunks", async () => {
    const text = JSON.stringify({ run: "r1", env: { K: "v".repeat(100_000) } });
    expect(await readThroughPipe([text.slice(0, 10), text.slice(10)])).toEqual({ ok: true, value: { run: "r1", env: { K: "v".repeat(100_000) } } });
  });

  it("is no binding when the pipe ends empty, or carries more than it may", async () => {
    expect(await readThroughPipe([])).toMatchObject({ ok: false, message: expect.stringContaining("nothing written") });
    expect(await readThroughPipe([Buffer.alloc(HELD_BINDING_MAX_BYTES + 1, 0x20)])).toMatchObject({ ok: false, message: expect.stringContaining("over") });
  });
});
