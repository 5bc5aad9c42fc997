import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { commandLines } from "../../shim/git-remote.js";

/** The remote helper's reader of git's commands (shim/git-remote.ts), as readline read them. */
async function all(chunks: readonly (string | Buffer)[], end = true): Promise<(string | undefined)[]> {
  const input = new PassThrough();
  const next = commandLines(input);
  for (const chunk of chunks) input.write(chunk);
  if (end) input.end();
  const lines: (string | undefined)[] = [];
  for (let line = await next(); line !== undefined; line = await next()) lines.push(line);
  lines.push(await next());
  return lines;
}

describe("git-remote-teamd: git's command lines", () => {
  it("splits at LF however the pipe cuts the text, blank lines (a batch's end) included", async () => {
    expect(await all(["capabilities\n", "option verbosity 1\nlist for-push\n\npush refs/heads/a:refs/heads/a\n\n"])).toEqual([
      "capabilities",
      "option verbosity 1",
      "list for-push",
      "",
      "push refs/heads/a:refs/heads/a",
      "",
      undefined,
    ]);
    expect(await all(["ca", "pabil", "ities\nli", "st\n"])).toEqual(["capabilities", "list", undefined]);
  });

  it("keeps a character whose bytes two reads split, drops a CR before LF, and gives a last line without LF at the end", async () => {
    const name = Buffer.from("push refs/heads/é:refs/heads/é\n");
    const at = name.indexOf(0xc3) + 1;
    expect(await all([name.subarray(0, at), name.subarray(at), "fetch abc\r\nlast"])).toEqual([
      "push refs/heads/é:refs/heads/é",
      "fetch abc",
      "last",
      undefined,
    ]);
  });

  it("waits for a line still to come, and ends once git closes its end", async () => {
    const input = new PassThrough();
    const next = commandLines(input);
    const first = next();
    setTimeout(() => input.write("capabilities\n"), 20);
    expect(await first).toBe("capabilities");
    const second = next();
    setTimeout(() => input.end(), 20);
    expect(await second).toBeUndefined();
  });
});
