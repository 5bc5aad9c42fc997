import { chmodSync, copyFileSync, cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { expect } from "vitest";
import { filesUnder } from "./files-under.js";
import type { TeamdHarness } from "./teamd-harness.js";
import { waitFor } from "./wait.js";

/**
 * What the real-agent tests (test/agents/) share: a seat's home seeded from the host before its
 * first start, and the checks every agent's run must pass.
 *
 * The owner can seed a seat's home in user mode (the folder is the owner's; in system mode
 * root's, and the start hands it, entry by entry, to the seat's own uid): `teamd exec` needs a
 * running seat, and an agent's first start without its settings stops at a login screen. Keys go
 * into files only the seat reads (mode 0600), never the team file, an argv or the ledger. The CLI
 * goes into the seat's ~/.local/bin (on the seat's PATH), as an install inside the seat would put
 * it; copied from the cache, as the suite reaches no registry from a seat.
 */
export interface SeatHomeSeed {
  readonly root: string;
  folder(path: string, mode?: number): void;
  file(path: string, content: string, mode?: number): void;
  /** A copy of a host file (an agent's binary). */
  copy(from: string, path: string, mode?: number): void;
  /** A copy of a host folder (an agent's package). */
  tree(from: string, path: string): void;
  /** A symbolic link, relative, inside the home. */
  link(target: string, path: string): void;
}

export function seedSeatHome(root: string): SeatHomeSeed {
  mkdirSync(root, { recursive: true, mode: 0o700 });
  chmodSync(root, 0o700);
  const at = (path: string) => join(root, path);
  const parent = (path: string) => mkdirSync(dirname(at(path)), { recursive: true, mode: 0o755 });
  return {
    root,
    folder(path, mode = 0o700) {
      mkdirSync(at(path), { recursive: true, mode });
      chmodSync(at(path), mode);
    },
    file(path, content, mode = 0o600) {
      parent(path);
      writeFileSync(at(path), content, { mode });
      chmodSync(at(path), mode);
    },
    copy(from, path, mode = 0o755) {
      parent(path);
      copyFileSync(from, at(path));
      chmodSync(at(path), mode);
    },
    tree(from, path) {
      parent(path);
      cpSync(from, at(path), { recursive: true });
    },
    link(target, path) {
      parent(path);
      symlinkSync(relative(dirname(at(path)), at(target)), at(path));
    },
  };
}

interface AgentRecord {
  type: string;
  action: string;
  result: string;
  fields?: Record<string, string>;
  detail?: Record<string, unknown>;
}

/** The seat's egress connections are on record, each through the stand-in's allow line, with their bytes and duration, in --json and in the table. */
export async function expectEgressOnRecord(h: TeamdHarness, seat: string, host: string, port: number, least: number): Promise<void> {
  // An egress outcome is written when its connection closes; an agent's client may hold a
  // keep-alive connection a little past its last answer, so wait for the first close.
  const isDone = (r: AgentRecord) => r.type === "outcome" && r.action === "egress.connect" && r.result === "done";
  let records: AgentRecord[] = [];
  await waitFor(
    async () => {
      records = await h.records<AgentRecord>("--seat", seat);
      return records.some(isDone);
    },
    30_000,
    500,
  );
  const intents = records.filter((r) => r.type === "intent" && r.action === "egress.connect");
  expect(intents.length).toBeGreaterThanOrEqual(least);
  for (const r of intents) expect(r.fields).toMatchObject({ host, address: "127.0.0.1", allowed_by: `${host}:${port}` });
  const outcomes = records.filter(isDone);
  expect(outcomes.length).toBeGreaterThanOrEqual(1);
  for (const o of outcomes) {
    expect(o.detail?.upBytes).toBeGreaterThan(0);
    expect(o.detail?.downBytes).toBeGreaterThan(0);
    expect(typeof o.detail?.ms).toBe("number");
  }
  const table = await h.ok(["log", "--seat", seat, "--type", "outcome"]);
  expect(table).toMatch(new RegExp(`egress\\.connect .*${host.replace(/\./g, "\\.")}:${port}/\\S+  done  up \\d+ bytes, down \\d+ bytes, \\d+ ms`));
}

/** The key is in no ledger file, run log, CLI output or `teamd logs --raw`. */
export async function expectKeyNowhere(h: TeamdHarness, seat: string, key: string, cliOutput: readonly string[]): Promise<void> {
  for (const file of [...filesUnder(join(h.home, "ledger")), ...filesUnder(join(h.home, "logs"))])
    expect(readFileSync(file).toString("latin1"), file).not.toContain(key);
  expect(cliOutput.join("\n")).not.toContain(key);
  expect(await h.ok(["logs", seat, "--raw"], { env: {} })).not.toContain(key);
}

/** Whether `ref` (a seat's branch) is in the hub within 90 s. */
export async function landedInHub(h: TeamdHarness, ref: string): Promise<boolean> {
  return waitFor(
    () => {
      try {
        return h.hubGit("rev-parse", "--verify", "-q", ref) !== "";
      } catch {
        return false;
      }
    },
    90_000,
    250,
  );
}
