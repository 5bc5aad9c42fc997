/**
 * The rows of docs/enforcement.md, as the selftest's map names them: every row of its two tables
 * (the RFC's §14 rows and the rows teamd adds), in order, each with the strength the documentation
 * states (the strongest it claims anywhere in its Status cell: **A** somewhere → "A", else **M** →
 * "M", else "not built"). A row is `hostBound` when what holds depends on the machine (kernel,
 * bubblewrap, AppArmor/SELinux, cgroups, /proc) — the corpus (corpus.ts) attacks it here; every
 * other A row says why it does not vary by host, so no A row is silently left out.
 * test/selftest/enforcement-rows.test.ts parses the document and holds this list to it, row for row.
 */
export type Strength = "A" | "M" | "not built";

export interface EnforcementRow {
  readonly id: string;
  /** The start of the row's Piece cell, as written in docs/enforcement.md. */
  readonly piece: string;
  readonly documented: Strength;
  /** Attacked by the selftest on this machine (corpus.ts names the attacks), or why not. */
  readonly basis: { readonly kind: "host-attacks" } | { readonly kind: "not-host-bound"; readonly reason: string };
}

const DAEMON_SIDE =
  "decided in teamd's own process from records and requests, the same on every Linux host; a seat reaches it only through its socket, which the containment row's attacks prove here";
const GIT_SIDE =
  "the daemon's own git hardening and bounds, the same on every host; the contained git it runs is built by the same plan and launcher the containment row attacks here";
const host = { kind: "host-attacks" } as const;
const fixed = (reason: string) => ({ kind: "not-host-bound", reason }) as const;

export const ENFORCEMENT_ROWS: readonly EnforcementRow[] = [
  { id: "vocabulary-gate", piece: "Capability vocabulary + gate (§3)", documented: "A", basis: fixed(DAEMON_SIDE) },
  { id: "read-visibility", piece: "read / lab-visibility refusal (c5)", documented: "A", basis: fixed(GIT_SIDE) },
  { id: "reserved-objects", piece: "Reserved-object denylist", documented: "A", basis: host },
  { id: "roles-scope", piece: "Roles, constraints, scope, SoD", documented: "A", basis: fixed(DAEMON_SIDE) },
  { id: "leases", piece: "Leases: bounded, recorded, revocable", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "ceiling-deny", piece: "Ceiling, deny, owner-sovereign limits", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "resource-envelope", piece: "Resource envelope: spend, runtime, lab count", documented: "A", basis: fixed(DAEMON_SIDE) },
  { id: "leads", piece: "leads authority root", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "grant", piece: "Grant / agreement (§10)", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "ledger", piece: "Record ledger: fields, chain, head", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "records-bounded", piece: "Records are bounded", documented: "A", basis: fixed(DAEMON_SIDE) },
  { id: "owner-told", piece: "The owner is told (c2)", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "terminal-text", piece: "Terminal text: the owner's views", documented: "A", basis: fixed(DAEMON_SIDE) },
  { id: "stop", piece: "Stop (c2): the machine-wide stop", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "identity", piece: "Identity — key on the holder's device", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "containment", piece: "Containment + fail-closed-on-break (§11)", documented: "A", basis: host },
  { id: "seccomp", piece: "The seccomp filter: every seat and every contained git", documented: "A", basis: host },
  { id: "fail-closed", piece: "Fail-closed when in doubt (c3)", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "secrets", piece: "Secrets: no lab key asked/stored/printed", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "instruction-channel", piece: "Instruction-channel refusal", documented: "not built", basis: fixed("not built") },
  { id: "start-pins", piece: "A seat's pinned start files at launch", documented: "A", basis: fixed(DAEMON_SIDE) },
  { id: "deploy", piece: "Deploy (§3, §10, §15)", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "act-as", piece: "act-as, publish (§3, §11)", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "caller-placement", piece: "Caller placement: a seat's identity is the socket", documented: "A", basis: host },
  { id: "seat-git-hardened", piece: "Seat repositories never run code on the host", documented: "A", basis: fixed(GIT_SIDE) },
  { id: "seat-git-bounded", piece: "The daemon's git work for a seat is bounded", documented: "A", basis: fixed(GIT_SIDE) },
  {
    id: "no-seat-links",
    piece: "The daemon's own work on a seat's data follows no link",
    documented: "A",
    basis: fixed("the daemon's lstat/lchown/O_NOFOLLOW discipline, the same on every Linux host"),
  },
  { id: "unknown-outcomes", piece: "Unknown means unknown (§15", documented: "A", basis: fixed(DAEMON_SIDE) },
  { id: "socket-memory", piece: "One seat cannot exhaust the daemon's memory", documented: "A", basis: fixed(DAEMON_SIDE) },
  {
    id: "seat-output",
    piece: "A seat's output kept, and its runs",
    documented: "A",
    basis: fixed("logs are written under TEAMD_HOME, which no plan binds: the containment row's reading attacks prove the plan here"),
  },
  { id: "agent-tools", piece: "An agent's own tools in a seat", documented: "A", basis: fixed(DAEMON_SIDE) },
  { id: "socket-access", piece: "Socket access: control and seat sockets mode 0600", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "local-flags", piece: "Local stop and revocation flags", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "signed-head", piece: "Signed ledger head", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "egress", piece: "Network egress: allowlisted, mediated, recorded", documented: "A", basis: host },
  { id: "broker", piece: "Secret broker: credential-withholding", documented: "M", basis: fixed(DAEMON_SIDE) },
  { id: "macos", piece: "Containment on macOS", documented: "not built", basis: fixed("not built") },
  { id: "windows", piece: "Containment on Windows", documented: "not built", basis: fixed("not built") },
];

export type RowId = (typeof ENFORCEMENT_ROWS)[number]["id"];
