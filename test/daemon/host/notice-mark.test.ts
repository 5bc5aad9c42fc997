import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TeamdHome } from "../../../daemon/host/home.js";
import type { LedgerEntry } from "../../../src/ledger/entry.js";
import { countUnseen, lastSeenNotice, noticesSeenPath } from "../../../daemon/host/notice-mark.js";

/**
 * The owner's seen mark, which the daemon now reads on every `teamd status` (issue 26): a
 * number `teamd notices` wrote, or none — never a link followed, a FIFO waited on or a large
 * file read whole; and the count of told notices past it, page by page.
 */
describe("the notices' seen mark", () => {
  let dir: string;
  let home: TeamdHome;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "teamd-notice-mark-"));
    home = { root: dir, mode: "user" } as TeamdHome;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    ["no mark", undefined, -1],
    ["a seq", "41\n", 41],
    ["not a seq", "forty\n", -1],
    ["a negative", "-3\n", -1],
    ["a seq past 32 bytes", `${"0".repeat(40)}7\n`, -1],
  ])("%s", (_what, text, expected) => {
    if (text !== undefined) writeFileSync(noticesSeenPath(home), text);
    expect(lastSeenNotice(home)).toBe(expected);
  });

  it("a link is not followed, a FIFO is not waited on", () => {
    writeFileSync(join(dir, "elsewhere"), "12\n");
    symlinkSync(join(dir, "elsewhere"), noticesSeenPath(home));
    expect(lastSeenNotice(home)).toBe(-1);
    rmSync(noticesSeenPath(home));
    execFileSync("mkfifo", [noticesSeenPath(home)]);
    expect(lastSeenNotice(home)).toBe(-1);
  });

  it("counts the daemon's told notices past the mark, across pages", () => {
    writeFileSync(noticesSeenPath(home), "3\n");
    const records = Array.from({ length: 12 }, (_, i) => ({ seq: i, action: i % 3 === 0 ? "seat.exec" : "notice", actor: "daemon" }) as LedgerEntry);
    const asked: number[] = [];
    const page = (from: number, limit: number) => {
      asked.push(from);
      return records.filter((r) => r.seq >= from).slice(0, limit);
    };
    // Seqs 4..11, less 6 and 9 (another action): 6 told.
    expect(countUnseen(home, page, 4)).toBe(6);
    expect(asked).toEqual([4, 8, 12]);
  });
});
