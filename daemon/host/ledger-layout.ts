import { existsSync } from "node:fs";
import { join } from "node:path";
import type { TeamdHome } from "./home.js";

/*
 * Where the machine's ledger lives under TEAMD_HOME, apart from ledger-host.ts (which opens it):
 * `teamd status` counts the unseen notices from the store alone, and must not load the whole
 * ledger (its archive, signing and dispatch) to learn a path (issue 26). ledger-host.ts
 * re-exports these.
 */
export interface LedgerLayout {
  readonly dir: string;
  readonly flagsDir: string;
  readonly keysDir: string;
  readonly daemonKey: string;
  readonly ownerPublicKey: string;
  readonly daemonPublicKey: string;
  readonly db: string;
}

export function ledgerLayout(home: TeamdHome): LedgerLayout {
  const dir = join(home.root, "ledger");
  const keysDir = join(home.root, "keys");
  return {
    dir,
    flagsDir: join(home.root, "flags"),
    keysDir,
    daemonKey: join(keysDir, "daemon.key"),
    ownerPublicKey: join(keysDir, "owner.pub"),
    daemonPublicKey: join(keysDir, "daemon.pub"),
    db: join(dir, "ledger.db"),
  };
}

export function ledgerExists(layout: LedgerLayout): boolean {
  return existsSync(layout.db);
}
