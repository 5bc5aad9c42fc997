import { join } from "node:path";
import { isPinnedFile, makeMissingFile, pinnedPathIsFile, readPinnedFile } from "../../src/effects/deploy-folder.js";
import type { StartableSeat } from "../../src/ledger/policy-in-force.js";
import { RefusalError } from "../../src/rpc/errors.js";
import { sha256 } from "../../src/teamfile/hashes.js";

/**
 * The start's pinned files at launch (§10: between agreement and act the tool compares again;
 * issue 24, item 2). A seat's clone persists across runs and lies in its own write scope, so what
 * it holds at a pinned path (an instruction file, a start script) is the seat's to change, and
 * an owner's re-pinned file would never reach it. Before every launch each pinned file is read
 * from the owner's repository (never following a link), checked against the hash the applied
 * policy pinned, written whole by its digest into a file teamd owns, and bound read-only over
 * its path in the seat's view (plan.ts) — never written into the seat's tree, where the seat's
 * links could lead a write.
 *
 * Refused `start.unpinned`, naming the file: the owner's copy is missing, a link, or changed since
 * the apply; or the seat's clone holds something else than a regular file under real folders at
 * the path — a link (a bind onto it would follow what the seat made), a folder, a fifo. Where
 * nothing is there (a pinned file the trunk does not hold yet), teamd makes the folders and an
 * empty file beneath the real folders it walked, owned by the seat's user, before the launch (no
 * seat process runs then), so bwrap never makes anything in the seat's tree. While the seat runs
 * the path cannot change: plan.ts binds each of its folders onto itself (a mount point cannot be
 * renamed), so a `teamd exec`, mounting again, binds onto the same file.
 *
 * A seat whose read scope is bounded gets no pin: its clone is a filtered history without the
 * pinned files (reserved from its read, docs/enforcement.md), and a pin would show it their
 * content (found by the attack on this change). What such a seat holds at the path is its own.
 */
export interface StartPin {
  readonly src: string;
  readonly dest: string;
}

export async function startPins(
  target: StartableSeat,
  seatRepo: string,
  install: (bytes: Buffer, mode: number) => Promise<string>,
  seatUser?: { readonly uid: number; readonly gid: number },
): Promise<StartPin[]> {
  const pins: StartPin[] = [];
  if (target.readFilter !== undefined) return pins;
  const seat = `${target.seat}@${target.team}`;
  for (const [path, pinned] of Object.entries(target.pinnedFiles)) {
    const owner = await readPinnedFile(target.repository, path);
    if (!isPinnedFile(owner)) {
      throw new RefusalError(
        "start.unpinned",
        `seat ${seat} pins the start file ${path}, which ${owner.absent} in the owner's repository ${target.repository}; fix: restore it (a regular file, not a link), review it and run teamd apply`,
      );
    }
    if (sha256(owner.bytes) !== pinned) {
      throw new RefusalError(
        "start.unpinned",
        `seat ${seat} pins the start file ${path}, which changed in the owner's repository since the policy in force was applied; fix: review the change and run teamd apply to pin it (or restore the pinned content)`,
      );
    }
    let seatCopy = await pinnedPathIsFile(seatRepo, path);
    if (seatCopy !== true && seatCopy.missing === true) seatCopy = await makeMissingFile(seatRepo, path, seatUser);
    if (seatCopy !== true) {
      throw new RefusalError(
        "start.unpinned",
        `seat ${seat} pins the start file ${path}, which ${seatCopy.absent} in the seat's clone ${seatRepo}; teamd binds the pinned content over a regular file only; fix: restore ${path} in the seat's clone (git checkout in it, as the owner), or remove the clone to have it made afresh`,
      );
    }
    pins.push({ src: await install(owner.bytes, owner.mode), dest: join(seatRepo, ...path.split("/")) });
  }
  return pins;
}
