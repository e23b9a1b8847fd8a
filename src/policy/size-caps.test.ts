import { describe, expect, it } from "vitest";
import {
  MAX_BODY_BYTES,
  MAX_MCP_LINE_BYTES,
  MAX_STREAM_FRAME_BYTES,
  buildBodyCapMessage,
  buildMcpLineCapMessage,
  buildMcpReadFailureMessage,
  buildMcpStderrLineCapMessage,
  buildStreamFrameCapMessage,
  formatCap,
  isOverCap,
} from "./size-caps.ts";

describe("size caps", () => {
  it("has upstream's constants", () => {
    expect([MAX_BODY_BYTES, MAX_STREAM_FRAME_BYTES, MAX_MCP_LINE_BYTES]).toEqual([67_108_864, 8_388_608, 1_048_576]);
  });

  it.each([
    [67_108_864, "64 MiB"],
    [1_048_576, "1 MiB"],
    [1_048_577, "1048577 bytes"],
    [900_000, "900000 bytes"],
  ])("formats %d as %s", (bytes, want) => {
    expect(formatCap(bytes)).toBe(want);
  });

  it("a body of exactly the cap is fine; one byte more is over", () => {
    expect(isOverCap(MAX_BODY_BYTES - 10, 10, MAX_BODY_BYTES)).toBe(false);
    expect(isOverCap(MAX_BODY_BYTES - 10, 11, MAX_BODY_BYTES)).toBe(true);
  });

  it("names the cap and the peer", () => {
    expect(buildBodyCapMessage("api.openai.com")).toBe("response body exceeded 64 MiB from api.openai.com");
    expect(buildStreamFrameCapMessage("api.anthropic.com")).toBe("stream frame exceeded 8 MiB from api.anthropic.com");
    expect(buildMcpLineCapMessage()).toBe("line exceeded 1 MiB from the MCP server");
    expect(buildMcpStderrLineCapMessage()).toBe("line exceeded 1 MiB from the MCP server's stderr");
    expect(buildBodyCapMessage("h", 1000)).toBe("response body exceeded 1000 bytes from h");
  });

  it("surfaces an oversized MCP line with the stderr tail when there is one", () => {
    expect(buildMcpReadFailureMessage()).toBe("Failed to read from MCP server: line exceeded 1 MiB from the MCP server");
    expect(buildMcpReadFailureMessage("boom\n")).toBe("Failed to read from MCP server: line exceeded 1 MiB from the MCP server\nserver stderr:\nboom\n");
  });
});
