import { readFileSync } from "node:fs";

/**
 * `teamd-shim checkpoint --last`: the handoff checkpoint teamd built when it halted this seat's
 * previous run (issue 27), as this run was given it — a read-only file teamd bound into the
 * seat at its start (TEAMD_HANDOFF, /run/teamd/handoff.json). Read from that file, never asked
 * of the daemon: what a run was handed is fixed at its start (its seat_start record names the
 * checkpoint's record). Facts carry their evidence; the notes are the previous run's own words.
 */
export function lastCheckpoint(opts: { json?: boolean }): void {
  const path = process.env.TEAMD_HANDOFF;
  let text: string | undefined;
  if (path !== undefined && path !== "") {
    try {
      text = readFileSync(path, "utf8");
    } catch {
      text = undefined;
    }
  }
  if (text === undefined) {
    process.stdout.write(opts.json ? "null\n" : "no handoff checkpoint: this seat's previous run was not halted by teamd (or it has none)\n");
    return;
  }
  process.stdout.write(opts.json ? text : `${JSON.stringify(JSON.parse(text) as unknown, null, 2)}\n`);
}
