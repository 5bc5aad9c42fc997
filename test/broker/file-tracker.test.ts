import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFileTracker, TrackerError } from "../../src/broker/index.js";

const task = (front: string, body: string) => `---\n${front}\n---\n${body}`;

describe("the file tracker: a folder of Markdown tasks with a small front matter (the embedded default)", () => {
  let dir: string;
  const kind = async (p: Promise<unknown>) => {
    const error = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TrackerError);
    return (error as TrackerError).kind;
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "teamd-file-tracker-"));
    writeFileSync(join(dir, "login.md"), task("title: Fix the login redirect\nlabels: [bug, web]\nassignee: alice", "It loops.\nDone when it does not.\n"));
    writeFileSync(join(dir, "docs.md"), task("title: Write the docs\nstate: open\nlabels: docs, later", "Body.\n"));
    writeFileSync(join(dir, "old.md"), task("title: Done already\nstate: closed", "x\n"));
    writeFileSync(join(dir, "notes.txt"), "not a task\n");
    writeFileSync(join(dir, "bare.md"), "No front matter at all.\n");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("pulls the open tasks, sorted by id, with their allowlisted fields", async () => {
    const tasks = await createFileTracker(dir).pull();
    expect(tasks.map((t) => t.id)).toEqual(["bare", "docs", "login"]);
    expect(tasks[2]).toEqual({
      id: "login",
      title: "Fix the login redirect",
      state: "open",
      labels: ["bug", "web"],
      assignee: "alice",
      url: "",
      claimed: false,
    });
    expect(tasks[1]?.labels).toEqual(["docs", "later"]);
  });

  it("reads one task with its body", async () => {
    expect(await createFileTracker(dir).read("login")).toMatchObject({ title: "Fix the login redirect", body: "It loops.\nDone when it does not.\n" });
  });

  it("claims a task in its front matter, atomically; the same seat again is a no-op, another seat is refused", async () => {
    const tracker = createFileTracker(dir);
    expect(await tracker.claim("login", "proj/dev")).toMatchObject({ id: "login", claimed: true });
    const text = readFileSync(join(dir, "login.md"), "utf8");
    expect(text).toContain("claimed-by: proj/dev");
    expect(text.endsWith("It loops.\nDone when it does not.\n")).toBe(true);
    expect(await tracker.claim("login", "proj/dev")).toMatchObject({ claimed: true });
    expect(await kind(tracker.claim("login", "proj/other"))).toBe("claimed");
    expect((await tracker.read("login")).title).toBe("Fix the login redirect");
  });

  it("appends a comment under a heading naming the account and the seat; the front matter and a bare task keep their shape", async () => {
    const tracker = createFileTracker(dir);
    const summary = await tracker.comment("login", "Found it.\n\n", { account: "gh:bot", token: "unused-by-a-file", seat: "proj/talk" });
    expect(summary.id).toBe("login");
    expect(readFileSync(join(dir, "login.md"), "utf8")).toBe(
      task(
        "title: Fix the login redirect\nlabels: [bug, web]\nassignee: alice",
        "It loops.\nDone when it does not.\n\n### Comment as gh:bot (from proj/talk)\n\nFound it.\n",
      ),
    );
    await tracker.comment("bare", "Me too.", { account: "gh:bot", token: "x", seat: "proj/a" });
    expect(readFileSync(join(dir, "bare.md"), "utf8")).toBe("No front matter at all.\n\n### Comment as gh:bot (from proj/a)\n\nMe too.\n");
    expect(await kind(tracker.comment("nope", "x", { account: "a", token: "x", seat: "s" }))).toBe("task");
  });

  it("refuses ids that walk a path, unknown tasks, links, and a missing folder", async () => {
    const tracker = createFileTracker(dir);
    for (const id of ["../etc/passwd", "a/b", "..", ".hidden", ""]) expect(await kind(tracker.read(id))).toBe("task");
    expect(await kind(tracker.read("nope"))).toBe("task");
    writeFileSync(join(tmpdir(), "teamd-outside-task.md"), task("title: outside", "secret\n"));
    symlinkSync(join(tmpdir(), "teamd-outside-task.md"), join(dir, "linked.md"));
    expect(await kind(tracker.read("linked"))).toBe("task");
    rmSync(join(tmpdir(), "teamd-outside-task.md"));
    expect(await kind(createFileTracker(join(dir, "missing")).pull())).toBe("unreachable");
  });
});
