import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appliedTeam } from "../support/applied-team.js";
import { daemonPid, quarantineLeftAfterLanding } from "../support/daemon-proc.js";
import { ensureSeatUser } from "../support/seat-user.js";
import { teamFile } from "../support/team-file.js";
import { type TeamdHarness } from "../support/teamd-harness.js";

/**
 * Proves, in docs/enforcement.md's row "The daemon's own work on a seat's data follows no link the
 * seat controls (§3, §11; issue 20)", its part on a pack file's bytes changing while the daemon
 * reads them (from an attack on issue 26's twenty-fourth round; held).
 *
 * seat-pack-file.ts answers the scan's reads from the bytes just copied (kept in memory),
 * not from the copy. Attacked from a real seat: the real helper, a `git` first on its PATH whose
 * pack-objects writes the real pack (an 8 MiB random blob) under the pack file's name and then
 * keeps rewriting bytes of it in place (dd conv=notrunc, random offsets) while the daemon
 * copies it. Whatever each push's end (refused or landed), the hub must stay whole (fsck), a
 * landed branch must name the seat's commit, and no outcome may be unknown.
 */
const asRoot = process.getuid?.() === 0;
if (asRoot) ensureSeatUser();

const TEAM_FILE = teamFile(`  w1:
    lab: anthropic
    capabilities:
      read: ~
      write: { path: src/ }
    start:
      command: [sleep, "3600"]
`);

const FAKE_GIT = [
  "#!/bin/sh",
  'if [ "$1" = pack-objects ]; then',
  "  p=$(readlink /proc/$$/fd/1)",
  '  /usr/bin/git "$@" > "$TEAMD_TMP/real.pack" || exit 1',
  '  cat "$TEAMD_TMP/real.pack" > "$p"',
  '  size=$(stat -c %s "$p")',
  // In the background, after the helper has said the file is whole: bytes of it rewritten in place.
  '  ( i=0; while [ $i -lt 400 ]; do off=$(( ($(od -An -N4 -tu4 /dev/urandom) % (size - 40)) + 12 )); head -c 64 /dev/urandom | dd of="$p" bs=1 seek=$off conv=notrunc status=none 2>/dev/null || break; i=$((i+1)); done ) </dev/null >/dev/null 2>&1 &',
  "  exit 0",
  "fi",
  'exec /usr/bin/git "$@"',
].join("\n");

describe.runIf(process.platform === "linux")("escape: a pack file rewritten while the daemon copies it", () => {
  let h: TeamdHarness;
  let start: string;

  beforeAll(async () => {
    h = await appliedTeam("teamd-pack-rewrite-", TEAM_FILE, { "README.md": "hello\n", "src/a.txt": "a\n" }, { daemonEnv: { TEAMD_REFUSAL_BUDGET: "200/60" } });
    await h.ok(["start", "--team", "proj"]);
    start = (await h.inSeat("w1", "git rev-parse HEAD")).stdout.trim();
  }, 180_000);
  afterAll(async () => {
    await h?.cleanup();
  });

  it("the hub stays whole, what lands is the seat's commit, no outcome is unknown", async () => {
    const outcomes: Record<string, number> = {};
    for (let round = 0; round < 12; round++) {
      const branch = `rw${round}`;
      const pushed = await h.inSeat(
        "w1",
        [
          "mkdir -p /tmp/evil-pack && cat > /tmp/evil-pack/git <<'EOS'",
          FAKE_GIT,
          "EOS",
          "chmod +x /tmp/evil-pack/git",
          `git checkout -q -B ${branch} ${start}`,
          `head -c ${8 * 1024 * 1024} /dev/urandom > src/${branch}.bin && git add src && git commit -qm ${branch}`,
          `printf 'push refs/heads/${branch}:refs/heads/${branch}\\n\\n' | PATH=/tmp/evil-pack:$PATH git-remote-teamd teamd teamd::seat 2>&1`,
          `echo commit=$(git rev-parse ${branch})`,
        ].join("\n"),
      );
      const line = /^(ok|error) refs\/heads\/\S+(.*)$/m.exec(pushed.stdout);
      const key =
        line === null
          ? `none: ${(pushed.stdout + pushed.stderr).slice(0, 200)}`
          : `${line[1]}${(line[2] ?? "")
              .replace(/[0-9a-f]{7,}/g, "#")
              .replace(/\d+/g, "N")
              .slice(0, 90)}`;
      outcomes[key] = (outcomes[key] ?? 0) + 1;
      const commit = /^commit=([0-9a-f]{40})$/m.exec(pushed.stdout)?.[1];
      const landed = h.hubRef(`refs/heads/seat/w1/${branch}`);
      if (landed !== undefined) expect(landed).toBe(commit);
    }
    console.log("outcomes:", JSON.stringify(outcomes, null, 1));
    const fsck = execFileSync("git", ["--git-dir", join(h), "fsck", "--no-progress", "--full"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    console.log("fsck:", fsck.trim() || "(clean)");
    const records = await h.records();
    const unknown = records.filter((r) => r.result === "unknown" || JSON.stringify(r).includes('"unknown"'));
    expect(unknown).toEqual([]);
    expect(await quarantineLeftAfterLanding(h)).toEqual([]);
    expect(daemonPid(h)).toBeGreaterThan(0);
  }, 600_000);
});

function join(h: TeamdHarness): string {
  return h.hubGit("rev-parse", "--absolute-git-dir");
}
