// The runtime's side of a held binding (docs/runtime.md, "A runtime started with its pool pod"): a warm pool pod's
// runtime may start with the pod, before any Run is bound to it, so the Node process and its modules are up when
// the Run comes. It then holds on one local read, the pipe `leviath bound-exec` (its parent) opened at
// LEVIATH_BINDING_FD, and learns its Run from it: one JSON document (api/binding.ts, HeldBindingSchema), written only
// once the pod's sidecar checked the binding and handed it out, with runtime.json and the `files` credentials already
// on disk. Until then nothing of any Run exists in the process. The pipe's end without a document (bound-exec found
// no binding, or it was refused) or anything that does not parse is no binding: the caller exits without reading
// runtime.json.
import { Socket } from "node:net";
import { BINDING_FD_ENV, HELD_BINDING_MAX_BYTES, HeldBindingSchema, type HeldBinding } from "../api/binding.ts";
import { formatZodIssue } from "../api/sidecar-contract.ts";

/** A held binding as read, or why there is none. */
export type HeldBindingRead = { readonly ok: true; readonly value: HeldBinding } | { readonly ok: false; readonly message: string };

/** Parses what came through the pipe (the whole of it, read to its end). */
export function parseHeldBinding(text: string): HeldBindingRead {
  if (text.trim() === "") return { ok: false, message: "the binding's pipe closed with nothing written (no binding)" };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, message: "the binding's message is not JSON" };
  }
  const parsed = HeldBindingSchema.safeParse(body);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, message: `the binding's message is malformed (${formatZodIssue(parsed.error)})` };
}

/** The descriptor LEVIATH_BINDING_FD names, undefined when it is not set (a runtime started at its binding, or a cold one). */
export function readBindingFd(env: Readonly<Record<string, string | undefined>>): number | undefined | Error {
  const raw = env[BINDING_FD_ENV];
  if (raw === undefined) return undefined;
  const fd = Number(raw);
  return /^[0-9]+$/.test(raw) && fd >= 3 ? fd : new Error(`${BINDING_FD_ENV}='${raw}' is not a file descriptor above stdio`);
}

/** Reads descriptor `fd` to its end (at most {@link HELD_BINDING_MAX_BYTES}) and parses it. */
export function readHeldBinding(fd: number): Promise<HeldBindingRead> {
  return new Promise((resolve) => {
    const pipe = new Socket({ fd, readable: true, writable: false });
    const chunks: Buffer[] = [];
    let size = 0;
    pipe.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > HELD_BINDING_MAX_BYTES) {
        pipe.destroy();
        resolve({ ok: false, message: `the binding's message is over ${HELD_BINDING_MAX_BYTES} bytes` });
        return;
      }
      chunks.push(chunk);
    });
    pipe.once("error", (err) => resolve({ ok: false, message: `the binding's pipe failed: ${err.message}` }));
    pipe.once("end", () => {
      pipe.destroy();
      resolve(parseHeldBinding(Buffer.concat(chunks).toString("utf8")));
    });
  });
}

/**
 * The environment a held runtime goes on with: `env` with the binding's variables added and LEVIATH_BINDING_FD
 * gone (a process it starts inherits no descriptor name it cannot use). `process.env` gets the same, for the code
 * that reads it rather than the environment it was handed.
 */
export function applyHeldBinding(env: Readonly<Record<string, string | undefined>>, binding: HeldBinding): Record<string, string | undefined> {
  const next: Record<string, string | undefined> = { ...env, ...binding.env };
  delete next[BINDING_FD_ENV];
  Object.assign(process.env, binding.env);
  delete process.env[BINDING_FD_ENV];
  return next;
}
