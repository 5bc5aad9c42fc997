import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import { RecordType, RevocationSubject, StopScope } from "../gen/teamd/v1/ledger_pb.js";
import { refuse, type Refusal } from "../kernel/decision.js";
import { TEMP_SUFFIX, fsyncDir, writeFileAtomic } from "./atomic-file.js";
import { describeError, LedgerRefusal } from "./errors.js";
import type { PublicKey } from "./keys.js";
import { checkOwnerAct, isRefusal, type CheckedOwnerAct } from "./owner-act.js";

/**
 * Local stop and revocation flags (§15 "Failure boundary", §11 machine-wide stop). The owner's
 * stop and a revocation never depend on the store: each is an owner-signed act written as its
 * own file under TEAMD_HOME/flags/, named by the act's id, atomically and never over another
 * one — so several stops and revocations coexist and recording one never drops another. The
 * gate reads the flags before any record. A flag file that cannot be read or verified is
 * reported, and the ledger fails closed on it (§11: an unreadable control state is refused).
 *
 * A stop flag stays until a recorded owner resume names it; a revocation flag stays for good
 * (the revocation sticks, and a later reconciliation of the store can never drop it).
 */

export const FLAG_SUFFIX = ".flag";

export interface Flag {
  readonly id: string;
  readonly kind: "stop" | "revocation";
  readonly act: CheckedOwnerAct;
  /** The encoded owner act, as the file holds it. */
  readonly bytes: Uint8Array;
  /** For a stop: the machine, or one team. */
  readonly scope: "machine" | "team" | undefined;
  readonly team: string;
  /** For a revocation: "<RevocationSubject>:<id>", as the view keys revocations. */
  readonly subject: string | undefined;
}

export interface FlagRead {
  readonly flags: readonly Flag[];
  readonly invalid: readonly { readonly file: string; readonly reason: string }[];
}

export interface Flags {
  readonly dir: string;
  /** Verify an owner-signed stop or revocation and write it as a flag (idempotent). */
  raise(actBytes: Uint8Array): Promise<Flag>;
  /**
   * Every flag present. Synchronous and cheap: it runs before every gated act. The directory
   * is read at most once per turn of the event loop — a flag another process writes is seen
   * from the next turn on (within a millisecond or so); one raised or removed here, at once.
   */
  read(): FlagRead;
  /** Every flag present, the directory read now: for a caller acting on a change it saw itself (the stop watch). */
  readFresh(): FlagRead;
  /** Remove flags (a stop after its resume is recorded). */
  remove(ids: readonly string[]): Promise<void>;
}

function flagFileName(kind: Flag["kind"], id: string): string {
  return `${kind}-${id}${FLAG_SUFFIX}`;
}

function toFlag(act: CheckedOwnerAct, bytes: Uint8Array): Flag | Refusal {
  const detail = act.payload.detail;
  if (act.proposal.type === RecordType.STOP && detail.case === "stop") {
    const scope = detail.value.scope === StopScope.MACHINE ? "machine" : detail.value.scope === StopScope.TEAM ? "team" : undefined;
    if (!scope || (scope === "team") !== (detail.value.team !== "") || detail.value.team !== act.proposal.team) {
      return refuse("owner.act-invalid", "a stop names the machine or exactly one team");
    }
    return { id: act.id, kind: "stop", act, bytes, scope, team: detail.value.team, subject: undefined };
  }
  if (act.proposal.type === RecordType.REVOCATION && detail.case === "revocation") {
    if (detail.value.subject === RevocationSubject.UNSPECIFIED || !detail.value.subjectId) {
      return refuse("owner.act-invalid", "a revocation names its subject");
    }
    return {
      id: act.id,
      kind: "revocation",
      act,
      bytes,
      scope: undefined,
      team: act.proposal.team,
      subject: `${detail.value.subject}:${detail.value.subjectId}`,
    };
  }
  return refuse("owner.act-invalid", "a flag is a stop or a revocation");
}

/** Check an encoded act as a flag: owner-signed, and a stop or a revocation. */
export function checkFlagAct(bytes: Uint8Array, ownerKey: PublicKey): Flag | Refusal {
  const act = checkOwnerAct(bytes, ownerKey);
  return isRefusal(act) ? act : toFlag(act, bytes);
}

export function createFlags(options: { readonly dir: string; readonly ownerKey: PublicKey }): Flags {
  const { dir, ownerKey } = options;
  // Verified flags by file name + size + mtime: a verify is ~0.15 ms and read() runs per act.
  const cache = new Map<string, { stamp: string; flag: Flag }>();

  // One read serves every act decided in the same turn: a burst of 64 requests would
  // otherwise list the directory 64 times to learn the same thing (a twentieth of a gated
  // request's CPU). A flag written by another process in the middle of a turn is ordered
  // against the turn's acts by nothing but chance anyway; the next turn sees it.
  let memo: FlagRead | undefined;
  function read(): FlagRead {
    if (memo) return memo;
    memo = readNow();
    setImmediate(() => (memo = undefined));
    return memo;
  }

  function readNow(): FlagRead {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { flags: [], invalid: [] };
      return { flags: [], invalid: [{ file: dir, reason: `the flags directory cannot be read: ${describeError(error)}` }] };
    }
    const flags: Flag[] = [];
    const invalid: { file: string; reason: string }[] = [];
    const seen = new Set<string>();
    for (const name of names.sort()) {
      if (name.endsWith(TEMP_SUFFIX) && name.startsWith(".")) continue;
      seen.add(name);
      const path = join(dir, name);
      try {
        const st = statSync(path);
        const stamp = `${st.size}:${st.mtimeMs}:${st.ino}`;
        const hit = cache.get(name);
        if (hit && hit.stamp === stamp) {
          flags.push(hit.flag);
          continue;
        }
        if (!st.isFile() || !name.endsWith(FLAG_SUFFIX)) throw new Error("not a flag file");
        const bytes = new Uint8Array(readFileSync(path));
        const flag = checkFlagAct(bytes, ownerKey);
        if (isRefusal(flag)) throw new Error(flag.reason);
        if (name !== flagFileName(flag.kind, flag.id)) throw new Error("the file name does not match the act it holds");
        cache.set(name, { stamp, flag });
        flags.push(flag);
      } catch (error) {
        cache.delete(name);
        invalid.push({ file: name, reason: describeError(error) });
      }
    }
    for (const name of [...cache.keys()]) if (!seen.has(name)) cache.delete(name);
    return { flags, invalid };
  }

  return {
    dir,
    read,
    readFresh: readNow,
    async raise(actBytes) {
      const flag = checkFlagAct(actBytes, ownerKey);
      if (isRefusal(flag)) throw LedgerRefusal.of(flag);
      await mkdir(dir, { recursive: true, mode: 0o700 });
      try {
        await writeFileAtomic(join(dir, flagFileName(flag.kind, flag.id)), actBytes, { mode: 0o600, exclusive: true });
      } catch (error) {
        // The same act already raised: the name is its content's id, so it is this flag.
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      } finally {
        memo = undefined;
      }
      return flag;
    },
    async remove(ids) {
      const wanted = new Set(ids);
      try {
        for (const flag of readNow().flags) {
          if (!wanted.has(flag.id)) continue;
          await unlink(join(dir, flagFileName(flag.kind, flag.id))).catch((error: NodeJS.ErrnoException) => {
            if (error.code !== "ENOENT") throw error;
          });
        }
      } finally {
        memo = undefined;
      }
      await fsyncDir(dir).catch(() => undefined);
    },
  };
}
