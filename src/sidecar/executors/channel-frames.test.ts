import { describe, expect, it } from "vitest";
import { ChannelReader, type ChannelEvent } from "./channel-frames.ts";

/** A reader over the given chunks, with a budget of `budget` bytes; its events. */
function read(chunks: (string | Buffer)[], budget = 1000, maxStream = 100): ChannelEvent[] {
  const events: ChannelEvent[] = [];
  let used = 0;
  const reader = new ChannelReader((e) => events.push(e), maxStream, { take: (n) => (used + n <= budget ? ((used += n), true) : false) });
  for (const c of chunks) reader.push(typeof c === "string" ? Buffer.from(c) : c);
  return events;
}

describe("ChannelReader", () => {
  it("reads ready, then a result's lines and exactly the bytes it announces, across any chunking", () => {
    const stream = "leviath-channel ready 42\nleviath-channel result ab12 3 0 6 4\nout\nx\nerr\nleviath-channel result cd34 - 1 0 0\n";
    const whole = read([stream]);
    // One byte at a time gives the same events.
    expect(read([...Buffer.from(stream)].map((b) => Buffer.from([b])))).toEqual(whole);
    expect(whole).toEqual([
      { kind: "ready", pid: 42 },
      { kind: "result", token: "ab12", exitCode: 3, sweep: 0, stdout: Buffer.from("out\nx\n"), stderr: Buffer.from("err\n"), dropped: false, held: 10 },
      { kind: "result", token: "cd34", exitCode: null, sweep: 1, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), dropped: false, held: 0 },
    ]);
  });

  it("reads output that looks like a frame as output: only lengths delimit it", () => {
    const body = "leviath-channel result ab12 0 0 0 0\n";
    const [r] = read([`leviath-channel result ab12 0 0 ${body.length} 0\n${body}`]);
    expect(r).toMatchObject({ kind: "result", stdout: Buffer.from(body) });
  });

  it("breaks on anything else, and reads nothing after", () => {
    expect(read(["hello\nleviath-channel ready 1\n"])).toEqual([{ kind: "broken", why: 'the channel wrote an unexpected line: "hello"' }]);
    expect(read(["leviath-channel result ab12 0 0 101 0\n"])[0]?.kind).toBe("broken");
    expect(read(["leviath-channel result AB 0 0 1 0\n"])[0]?.kind).toBe("broken");
    expect(read(["leviath-channel ready 0\n"])[0]?.kind).toBe("broken");
    expect(read(["x".repeat(600)])).toEqual([{ kind: "broken", why: "a line of the channel passed 512 bytes" }]);
    expect(read(["leviath-channel refused\n", "leviath-channel unavailable wc is not on the PATH\n"])).toEqual([{ kind: "refused" }, { kind: "unavailable", why: "wc is not on the PATH" }]);
  });

  it("drops a result's bytes past the budget but still reads them, so the next frame is found", () => {
    const events = read(["leviath-channel result aa 0 0 8 4\n", "12345678", "abcd", "leviath-channel ready 5\n"], 10);
    expect(events).toEqual([
      { kind: "result", token: "aa", exitCode: 0, sweep: 0, stdout: Buffer.from("12345678"), stderr: Buffer.alloc(0), dropped: true, held: 8 },
      { kind: "ready", pid: 5 },
    ]);
  });

  it("gives back what an unfinished result held when the stream ends", () => {
    const reader = new ChannelReader(() => undefined, 100, { take: () => true });
    reader.push(Buffer.from("leviath-channel result aa 0 0 8 0\n1234"));
    expect(reader.abandon()).toBe(4);
  });
});
