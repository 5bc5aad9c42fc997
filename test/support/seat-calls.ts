import { expect } from "vitest";
import type { RunResult } from "./programs.js";
import type { TeamdHarness } from "./teamd-harness.js";

/** A seat entry of a team file (YAML, indented four): its lab, its capabilities (indented six), a start that waits. */
export function waitingSeat(lab: string, capabilities: string): string {
  return `    lab: ${lab}\n    capabilities:\n${capabilities}    start:\n      command: [sleep, "3600"]\n`;
}

/** A ledger record as `teamd log --json` prints the fields the delegation tests read. */
export interface LoggedRecord {
  readonly seq: number;
  readonly type: string;
  readonly actor: string;
  readonly signer: string;
  readonly coAuthorizer: string;
  readonly action: string;
  readonly detail?: { readonly rule?: string; readonly change?: string };
}

/**
 * The calls a test makes from inside a seat and of the ledger: `json` runs `teamd-shim … --json` and
 * expects success, `refused` expects a failure naming the rule, `log` reads every record.
 */
export function seatCalls(h: TeamdHarness): {
  json<T>(who: string, ...args: string[]): Promise<T>;
  refused(rule: string, who: string, ...args: string[]): Promise<RunResult>;
  log(): Promise<LoggedRecord[]>;
} {
  return {
    async json<T>(who: string, ...args: string[]): Promise<T> {
      const r = await h.shim(who, ...args, "--json");
      expect(r.code, r.stdout + r.stderr).toBe(0);
      return JSON.parse(r.stdout) as T;
    },
    async refused(rule: string, who: string, ...args: string[]): Promise<RunResult> {
      const r = await h.shim(who, ...args);
      expect(r.code, r.stdout + r.stderr).not.toBe(0);
      expect(r.stderr).toContain(rule);
      return r;
    },
    async log(): Promise<LoggedRecord[]> {
      return (await h.ok(["log", "--json"]))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as LoggedRecord);
    },
  };
}

/** A file the seat writes itself, in its own /tmp (through its shell: no host path involved): its path inside the seat. */
export async function writeInSeat(h: TeamdHarness, seat: string, name: string, text: string): Promise<string> {
  const r = await h.sh(seat, `echo ${Buffer.from(text).toString("base64")} | base64 -d > /tmp/${name}`);
  expect(r.code, r.stderr).toBe(0);
  return `/tmp/${name}`;
}
