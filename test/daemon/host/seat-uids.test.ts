import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { seatHostUser, subordinateRange, type SeatIdFiles } from "../../../daemon/host/seat-uids.js";
import type { TeamdHome } from "../../../daemon/host/home.js";
import { RefusalError } from "../../../src/rpc/index.js";

const BASE = { name: "teamd-seat", uid: 998, gid: 997 };

describe("subordinateRange", () => {
  it.each([
    ["teamd-seat:1879048192:65536\n", { start: 1879048192, count: 65536 }],
    ["dev:100000:65536\nteamd-seat:200000:10\n", { start: 200000, count: 10 }],
    ["  teamd-seat:5:5  \n", { start: 5, count: 5 }],
  ])("reads %j", (text, range) => expect(subordinateRange(text, "teamd-seat")).toEqual(range));
  it.each([
    ["", "nothing"],
    ["dev:100000:65536\n", "another user's range"],
    ["teamd-seat:x:5\n", "a non-number"],
    ["teamd-seat:0:5\n", "a range at 0 (root)"],
    ["teamd-seat:2147483000:65536\n", "a range past 2^31 (Node's spawn cannot pass such a uid)"],
    ["teamd-seat:5:0\n", "an empty range"],
  ])("refuses %j (%s)", (text) => expect(subordinateRange(text, "teamd-seat")).toBeUndefined());
});

describe("seatHostUser", () => {
  let dir: string;
  let files: SeatIdFiles;
  let home: TeamdHome;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "teamd-seat-uids-"));
    files = { subuid: join(dir, "subuid"), subgid: join(dir, "subgid"), passwd: join(dir, "passwd"), group: join(dir, "group"), claims: join(dir, "claims") };
    writeFileSync(files.subuid, "teamd-seat:1879048192:3\n");
    writeFileSync(files.subgid, "teamd-seat:1879048192:3\n");
    writeFileSync(files.passwd, "root:x:0:0::/root:/bin/sh\nteamd-seat:x:998:997::/nonexistent:/usr/sbin/nologin\n");
    writeFileSync(files.group, "root:x:0:\n");
    mkdirSync(join(dir, "home"));
    home = { root: join(dir, "home"), mode: "system" } as TeamdHome;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const refusal = (fn: () => unknown): string => {
    try {
      fn();
    } catch (error) {
      if (error instanceof RefusalError) return `${error.rule}: ${error.message}`;
      throw error;
    }
    throw new Error("not refused");
  };

  it("gives each seat its own ids, the same ones again after a restart, with the seat user's ids inside", () => {
    const a = seatHostUser(home, "proj", "a", BASE, files);
    const b = seatHostUser(home, "proj", "b", BASE, files);
    expect(a).toMatchObject({ uid: 1879048192, gid: 1879048192, inside: { uid: 998, gid: 997 } });
    expect(b).toMatchObject({ uid: 1879048193, gid: 1879048193 });
    expect(seatHostUser(home, "proj", "a", BASE, files).uid).toBe(a.uid);
    expect(JSON.parse(readFileSync(join(home.root, "seat-ids.json"), "utf8"))).toEqual({ "proj/a": 0, "proj/b": 1 });
    // Another team's seat of the same name is another seat.
    expect(seatHostUser(home, "other", "a", BASE, files).uid).toBe(1879048194);
  });

  it("fails closed: no range, a full range, an id someone has, a map it cannot read", () => {
    writeFileSync(files.subgid, "");
    expect(refusal(() => seatHostUser(home, "proj", "a", BASE, files))).toMatch(/^containment.unavailable: .*subordinate ids.*setup\.sh/);
    writeFileSync(files.subgid, "teamd-seat:1879048192:3\n");
    for (const seat of ["a", "b", "c"]) seatHostUser(home, "proj", seat, BASE, files);
    expect(refusal(() => seatHostUser(home, "proj", "d", BASE, files))).toMatch(/used up/);
    writeFileSync(join(home.root, "seat-ids.json"), "{}");
    rmSync(files.claims, { recursive: true });
    writeFileSync(files.passwd, "someone:x:1879048192:1::/:/bin/sh\n");
    expect(refusal(() => seatHostUser(home, "proj", "a", BASE, files))).toMatch(/overlaps user 'someone'/);
    writeFileSync(join(home.root, "seat-ids.json"), "{ not json");
    expect(refusal(() => seatHostUser(home, "proj", "a", BASE, files))).toMatch(/^containment.undecidable: .*seat-ids.json cannot be read/);
    writeFileSync(join(home.root, "seat-ids.json"), '{"proj/a": -1}');
    expect(refusal(() => seatHostUser(home, "proj", "a", BASE, files))).toMatch(/cannot be read/);
  });

  it("never gives two homes of one machine the same uid; a home that is gone frees its claims", () => {
    mkdirSync(join(dir, "home2"));
    const other = { root: join(dir, "home2"), mode: "system" } as TeamdHome;
    const a = seatHostUser(home, "proj", "a", BASE, files);
    const b = seatHostUser(other, "proj", "a", BASE, files);
    expect(b.uid).not.toBe(a.uid);
    expect(seatHostUser(other, "proj", "a", BASE, files).uid).toBe(b.uid);
    // A map that names an offset another home holds is refused, never shared.
    writeFileSync(join(other.root, "seat-ids.json"), JSON.stringify({ "proj/a": 0 }));
    expect(refusal(() => seatHostUser(other, "proj", "a", BASE, files))).toMatch(/claimed on this machine by .*home \(proj\/a\)/);
    // The first home removed (a new folder at its path is another home): its uid is free again.
    rmSync(home.root, { recursive: true });
    mkdirSync(join(dir, "home3"));
    const third = { root: join(dir, "home3"), mode: "system" } as TeamdHome;
    expect(seatHostUser(third, "proj", "x", BASE, files).uid).toBe(a.uid);
  });
});
