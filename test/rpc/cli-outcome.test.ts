import { afterEach, describe, expect, it, vi } from "vitest";
import { runCli } from "../../src/rpc/index.js";
import { terminalJson, terminalLines } from "../../daemon/host/terminal-text.js";

/**
 * The owner's CLI prints an error escaped: a refusal's reason can quote what a seat sent (a ref
 * name, a path), so `teamd` hands runCli its terminal renderer (daemon/main.ts). The control:
 * without a renderer (the shim, inside the seat), the text is as it came.
 */
const failing = (message: string) => ({
  parseAsync: () => Promise.reject(new Error(message)),
});

describe("runCli's error for a terminal", () => {
  const written: string[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    written.length = 0;
    process.exitCode = 0;
  });
  const capture = () => {
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => (written.push(String(chunk)), true));
    vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => (written.push(String(chunk)), true));
  };
  const evil = "refused: refs/heads/x\u001b]52;c;ZXZpbA==\u0007\u009b2J";

  it("escapes every control of a quoted seat input, text and --json", async () => {
    capture();
    await runCli("teamd", failing(evil), ["node", "teamd", "status"], { text: terminalLines, json: terminalJson });
    await runCli("teamd", failing(evil), ["node", "teamd", "status", "--json"], { text: terminalLines, json: terminalJson });
    expect(written.join("")).not.toMatch(/[\u001b\u0007\u009b]/);
    expect(written[0]).toContain("\\x1b]52;c;ZXZpbA==\\x07\\x9b2J");
    // JSON keeps the text (parsed back it is what came), with no raw control in what is printed.
    expect(JSON.stringify(JSON.parse(written[1]!))).toContain("\\u001b]52");
  });

  it("control: without a renderer the text is as it came", async () => {
    capture();
    await runCli("teamd-shim", failing(evil), ["node", "teamd-shim", "x"]);
    expect(written.join("")).toContain("\u001b]52;c;ZXZpbA==");
  });
});
