import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CORPUS } from "../../src/selftest/corpus.js";
import { ENFORCEMENT_ROWS, type Strength } from "../../src/selftest/rows.js";
import { ROOT } from "../support/programs.js";

/**
 * The selftest's rows are docs/enforcement.md's, row for row: the two tables parsed (the RFC's §14
 * rows and the rows teamd adds), each row's Piece and the strongest strength its Status cell
 * claims, held to src/selftest/rows.ts; every A row either has corpus attacks or says why it does
 * not depend on the host; every attack names a row that exists and is host-bound.
 */
interface DocRow {
  readonly piece: string;
  readonly documented: Strength;
}

function documentedRows(): DocRow[] {
  const text = readFileSync(join(ROOT, "docs/enforcement.md"), "utf8");
  const rows: DocRow[] = [];
  // The two tables whose header is `| Piece ... | Status |`, up to the first blank line after each.
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (!/^\| Piece\b.*\| Status\b/.test(lines[i] ?? "")) continue;
    for (let j = i + 2; j < lines.length && (lines[j] ?? "").startsWith("|"); j++) {
      const cells = (lines[j] as string).split("|").map((c) => c.trim());
      const [piece, status] = [cells[1] as string, cells[2] as string];
      rows.push({ piece, documented: status.includes("**A") ? "A" : status.includes("**M") ? "M" : "not built" });
    }
  }
  return rows;
}

describe("the selftest's map and docs/enforcement.md", () => {
  it("name the same rows, in the same order, with the same documented strength", () => {
    const doc = documentedRows();
    expect(doc.length).toBeGreaterThan(30);
    expect(doc.map((r) => r.documented)).toEqual(ENFORCEMENT_ROWS.map((r) => r.documented));
    expect(doc.length).toBe(ENFORCEMENT_ROWS.length);
    for (const [i, row] of ENFORCEMENT_ROWS.entries()) expect(doc[i]?.piece.startsWith(row.piece), `${row.id}: '${doc[i]?.piece}'`).toBe(true);
  });

  it("every A row is attacked on the host by the corpus, or says why it does not depend on the host", () => {
    for (const row of ENFORCEMENT_ROWS.filter((r) => r.documented === "A")) {
      const attacks = CORPUS.filter((a) => a.rows.includes(row.id));
      if (row.basis.kind === "host-attacks") expect(attacks.length, row.id).toBeGreaterThan(0);
      else expect(row.basis.reason.length, row.id).toBeGreaterThan(20);
    }
  });

  it("every attack proves a host-bound row, and the issue's list is covered", () => {
    const hostBound = new Set(ENFORCEMENT_ROWS.filter((r) => r.basis.kind === "host-attacks").map((r) => r.id));
    for (const a of CORPUS) for (const row of a.rows) expect(hostBound.has(row), `${a.id} -> ${row}`).toBe(true);
    const ids = CORPUS.map((a) => a.id);
    for (const needed of [
      "read-outside",
      "write-outside",
      "host-sockets",
      "host-loopback",
      "namespaces",
      "ptrace",
      "proc-sys",
      "sys",
      "devices",
      "inherited-fds",
      "seccomp-families",
      "keyring-between-seats",
      "egress-no-route",
      "limits-processes",
      "limits-memory",
    ])
      expect(ids).toContain(needed);
  });
});
