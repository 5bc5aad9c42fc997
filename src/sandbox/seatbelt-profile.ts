import { isCanonicalAbsolute } from "../objects/paths.js";
import { refuseContainment, type Checked } from "./refusal.js";

/**
 * The macOS Seatbelt (sandbox-exec) profile of a seat, rendered from
 * sandbox-profiles/macos-seatbelt.sb.template (pure: the template text comes in as data).
 * Deny by default; then what the seat may read, what it may write, the one socket it may
 * connect to; the reserved objects are denied last (in SBPL a later matching rule wins over
 * an earlier one). The launcher that runs it on macOS is not built yet (launcher-macos.ts
 * refuses); this is the tested first step.
 *
 * Each placeholder is a whole line `;;@NAME@` and becomes whole rules, never a bare filter
 * list: an `(allow file-read*)` left with no filter would allow every file, so an empty
 * list renders as no rule at all.
 */
export interface SeatbeltInput {
  readonly seat: { readonly team: string; readonly seat: string };
  /** Canonical paths (on macOS realpath gives /private/var, /private/tmp). */
  readonly writable: readonly string[];
  readonly readOnly: readonly string[];
  /** Reserved objects: no read, no write, even under an allowed folder. */
  readonly denied: readonly string[];
  readonly socket: string;
  readonly node: string;
  readonly shimBundle?: string;
}

/** What programs need to read on macOS; the /etc secrets are denied by the template itself. */
export const MACOS_SYSTEM_READ = Object.freeze([
  "/usr",
  "/bin",
  "/sbin",
  "/System",
  "/Library/Apple",
  "/Library/Preferences/Logging",
  "/private/etc",
  "/private/var/db/timezone",
]);

const PLACEHOLDERS = ["HEADER", "SYSTEM_READ", "READ_ONLY", "WRITABLE", "SOCKET", "DENIED"] as const;
type Placeholder = (typeof PLACEHOLDERS)[number];

export function renderSeatbeltProfile(template: string, input: SeatbeltInput): Checked<string> {
  if (!/^\(deny default\)$/m.test(template)) return refuse("the template does not deny by default");
  if (/^\s*\(allow default\)/m.test(template)) return refuse("the template allows by default");
  const found = [...template.matchAll(/^[ \t]*;;@([A-Z_]+)@[ \t]*$/gm)].map((m) => m[1] as string);
  for (const name of found) if (!(PLACEHOLDERS as readonly string[]).includes(name)) return refuse(`the template has an unknown placeholder @${name}@`);
  for (const name of PLACEHOLDERS) if (found.filter((f) => f === name).length !== 1) return refuse(`the template must hold @${name}@ exactly once`);

  const paths: Array<[string, string]> = [
    ...input.writable.map((p): [string, string] => ["writable", p]),
    ...input.readOnly.map((p): [string, string] => ["read-only", p]),
    ...input.denied.map((p): [string, string] => ["denied", p]),
    ["socket", input.socket],
    ["node", input.node],
    ...(input.shimBundle === undefined ? [] : [["shim bundle", input.shimBundle] as [string, string]]),
  ];
  for (const [what, path] of paths) if (!isCanonicalAbsolute(path)) return refuse(`the ${what} path '${path}' is not canonical`);
  for (const name of [input.seat.team, input.seat.seat]) if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(name)) return refuse(`'${name}' is not a plain name`);

  const subpaths = (list: readonly string[]) => list.map((p) => `(subpath ${quote(p)})`);
  const rule = (head: string, filters: readonly string[]) => (filters.length === 0 ? [] : [`(${head}`, ...filters.map((f) => `  ${f}`), ")"]);
  const blocks: Record<Placeholder, string[]> = {
    HEADER: [`;; seat ${input.seat.seat} of team ${input.seat.team}`],
    SYSTEM_READ: rule("allow file-read*", [
      ...subpaths(MACOS_SYSTEM_READ),
      `(literal ${quote(input.node)})`,
      ...(input.shimBundle ? [`(subpath ${quote(input.shimBundle)})`] : []),
    ]),
    READ_ONLY: rule("allow file-read*", subpaths(input.readOnly)),
    WRITABLE: rule("allow file-read* file-write*", subpaths(input.writable)),
    SOCKET: [`(allow network-outbound (remote unix-socket (path-literal ${quote(input.socket)})))`],
    DENIED: rule("deny file-read* file-write*", subpaths(input.denied)),
  };
  const out = template.replace(/^([ \t]*);;@([A-Z_]+)@[ \t]*$/gm, (_line, indent: string, name: string) =>
    blocks[name as Placeholder].map((line) => `${indent}${line}`).join("\n"),
  );
  return { ok: true, value: out };
}

/** An SBPL string literal: backslash and double quote escaped; canonical paths hold no control characters. */
function quote(value: string): string {
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

function refuse(reason: string): { ok: false; refusal: ReturnType<typeof refuseContainment> } {
  return { ok: false, refusal: refuseContainment("containment.undecidable", reason, "fix sandbox-profiles/macos-seatbelt.sb.template or the seat's paths") };
}
