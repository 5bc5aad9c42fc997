import { join } from "node:path";

/**
 * Where a ledger keeps its files. The head may be placed elsewhere than the database (a
 * different disk or directory, so one restored backup does not bring back both); by default
 * it sits beside it.
 */
export interface LedgerPaths {
  readonly dir: string;
  readonly db: string;
  /** The single-writer lock (writer-lock.ts). */
  readonly lock: string;
  readonly head: string;
}

export function ledgerPaths(dir: string, headPath?: string): LedgerPaths {
  return {
    dir,
    db: join(dir, "ledger.db"),
    lock: join(dir, "ledger.lock"),
    head: headPath ?? join(dir, "head"),
  };
}
