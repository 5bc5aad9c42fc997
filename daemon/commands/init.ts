import { RefusalError, UsageError } from "../../src/rpc/errors.js";
import { existsSync } from "node:fs";
import { mkdir, open, rm } from "node:fs/promises";
import { basename, join, relative, isAbsolute } from "node:path";
import { RecordType, TargetKind } from "../../src/gen/teamd/v1/ledger_pb.js";
import { OwnerActKind } from "../../src/gen/teamd/v1/control_pb.js";
import { genesisDraft, signOwnerAct } from "../../src/ledger/index.js";
import { resolveHome } from "../host/home.js";
import { createHub, ensureRemote, hubPath, repositoryRoot } from "../host/hub.js";
import { checkName } from "../host/names.js";
import { openOwnerChannel } from "../owner/channel.js";
import { ensureOwnerKey, isEncrypted, ownerKeyPath } from "../host/owner-key.js";
import { askSecret, askYesNo, ownerPassphrase } from "./prompt.js";
import { excludeTeamFile, isTracked, TEAM_FILE_NAME } from "../host/team-file-placement.js";
import { defaultTeamName, teamFileTemplate } from "./team-file-template.js";
import type { Ambient } from "../host/ambient.js";

export interface InitOptions {
  readonly repo?: string;
  readonly team?: string;
  readonly yes?: boolean;
  readonly json?: boolean;
  readonly passphrase?: boolean;
}

function inside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** Write a file only if it does not exist (never overwrite the owner's edits). */
async function writeNew(path: string, text: string): Promise<boolean> {
  try {
    const handle = await open(path, "wx", 0o600);
    try {
      await handle.writeFile(text);
    } finally {
      await handle.close();
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
}

/**
 * `teamd init`: the owner key, TEAMD_HOME, the daemon key, the genesis record, and this
 * repository registered as a team (hub, remote `teamd`, an untracked commented teamd.yaml).
 * Every step checks what exists first, so re-running it is safe and says what it found.
 */
export async function init(options: InitOptions, ambient: Ambient): Promise<void> {
  const home = resolveHome();
  const repoRoot = await repositoryRoot(options.repo ?? process.cwd());
  if (await isTracked(repoRoot)) {
    throw new RefusalError(
      "teamfile.tracked",
      `${TEAM_FILE_NAME} is tracked by git in ${repoRoot}: run 'git rm --cached ${TEAM_FILE_NAME}', commit, then run teamd init again`,
    );
  }
  const derived = defaultTeamName(basename(repoRoot));
  if (options.team === undefined && derived === undefined) throw new UsageError(`cannot derive a team name from '${basename(repoRoot)}': pass --team NAME`);
  const team = checkName("team", options.team ?? (derived as string));

  const keyPath = ownerKeyPath();
  for (const [what, dir] of [
    ["TEAMD_HOME", home.root],
    ["the repository", repoRoot],
  ] as const) {
    if (inside(keyPath, dir))
      throw new Error(`the owner key ${keyPath} would sit inside ${what} (${dir}), where a seat could reach it: set TEAMD_OWNER_KEY elsewhere`);
  }

  if (!options.yes) {
    const ok = await askYesNo(`Register ${repoRoot} as team '${team}' (state in ${home.root})?`);
    if (!ok) throw new Error("cancelled; nothing was changed");
  }

  let passphrase: string | undefined;
  if (existsSync(keyPath)) {
    if (isEncrypted(keyPath)) passphrase = await ownerPassphrase();
  } else if (options.passphrase) {
    passphrase = await askSecret("new owner key passphrase: ");
    if ((await askSecret("again: ")) !== passphrase) throw new Error("the passphrases differ; nothing was changed");
  }
  const { key, created: keyCreated } = await ensureOwnerKey(keyPath, passphrase);
  await mkdir(home.root, { recursive: true, mode: 0o700 });

  const lines: string[] = [];
  const report: Record<string, unknown> = { team, repository: repoRoot, home: home.root, mode: home.mode };
  lines.push(`owner key: ${keyCreated ? "created" : "exists"} at ${keyPath}${passphrase !== undefined ? " (passphrase-protected)" : ""}`);
  report.ownerKey = { path: keyPath, created: keyCreated, publicKey: Buffer.from(key.publicKey).toString("hex") };

  // A key this run made is the owner's only once a genesis pins it: a run that fails before
  // that removes it, so the next run does not find a key no ledger knows ("owner key: exists").
  const forgetNewKey = async (error: unknown): Promise<never> => {
    if (keyCreated) {
      await rm(keyPath, { force: true });
      process.stderr.write(`teamd init: the owner key this run made at ${keyPath} was removed (no ledger pinned it)\n`);
    }
    throw error;
  };
  const channel = await openOwnerChannel(home, ambient.now).catch(forgetNewKey);
  try {
    const status = await channel.ledgerStatus().catch(forgetNewKey);
    const genesisAct = await signOwnerAct(genesisDraft({ ownerPublicKey: key.publicKey, daemonPublicKey: status.daemonPublicKey }), key.seed);
    const genesis = await channel.submit(OwnerActKind.GENESIS, genesisAct).catch(forgetNewKey);
    // A ledger that existed before this run pins another owner's key, never the one just made.
    if (keyCreated && !genesis.created) {
      await forgetNewKey(
        new RefusalError(
          "owner.signature",
          `the ledger in ${home.root} was made by another owner key; this machine's owner acts are signed by that key: set TEAMD_OWNER_KEY to it, or use another TEAMD_HOME`,
        ),
      );
    }
    lines.push(
      `ledger: ${genesis.created ? "created (genesis pins your key and the daemon's)" : "exists"} in ${join(home.root, "ledger")} (via ${channel.via === "daemon" ? "the daemon" : "this command; the daemon is not running"})`,
    );
    report.ledger = { created: genesis.created, via: channel.via };

    // User mode: this command makes the hub (the daemon may be down). System mode: the
    // daemon makes it when it records the team (an owner without root cannot write
    // TEAMD_HOME), and this command only adds the remote.
    const byDaemon = home.mode === "system";
    const hub = byDaemon ? { path: hubPath(home.root, team), created: false } : await createHub(home.root, team, repoRoot);

    const teamAct = await signOwnerAct(
      {
        type: RecordType.TEAM,
        team,
        action: "team.register",
        payload: {
          domain: { team, repositoryRoot: repoRoot },
          target: { kind: TargetKind.TEAM, name: team },
          detail: { case: "team", value: { repository: repoRoot, hub: hub.path } },
        },
      },
      key.seed,
    );
    const registered = await channel.submit(OwnerActKind.TEAM, teamAct);
    const remote = await ensureRemote(repoRoot, hub.path, { foreignHub: byDaemon && process.getuid?.() !== 0 });
    lines.push(
      `hub: ${byDaemon ? "made or found by the daemon" : hub.created ? "created" : "exists"} at ${hub.path}; remote 'teamd' ${remote === "added" ? "added" : "present"}`,
    );
    report.hub = { path: hub.path, ...(byDaemon ? { by: "daemon" } : { created: hub.created }), remote };
    lines.push(`team '${team}': ${registered.created ? "registered" : "already registered"} (record ${registered.seq})`);
    report.registered = { seq: registered.seq, created: registered.created };
  } finally {
    await channel.close();
  }

  const excluded = await excludeTeamFile(repoRoot);
  const written = await writeNew(join(repoRoot, TEAM_FILE_NAME), teamFileTemplate(team));
  lines.push(
    `${TEAM_FILE_NAME}: ${written ? "written" : "exists"} at ${join(repoRoot, TEAM_FILE_NAME)}; ${excluded ? "excluded from git (.git/info/exclude)" : "already excluded from git"}`,
  );
  lines.push(`next: edit ${TEAM_FILE_NAME}, then run 'teamd apply'`);
  report.teamFile = { written, excluded };

  process.stdout.write(options.json ? JSON.stringify(report) + "\n" : lines.join("\n") + "\n");
}
