import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  closeSync,
  existsSync,
  ftruncateSync,
  linkSync,
  mkdtempSync,
  openSync,
  writeSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { open } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PackRejected } from "../../src/effects/git-receive.js";
import { PACK_FILE_NAME, packFileName } from "../../src/effects/pack-file-name.js";
import { openSeatPackFile, RECENT_BYTES } from "../../src/effects/seat-pack-file.js";

/**
 * The daemon's read of a pack a seat wrote to a file in its tmp folder (seat-pack-file.ts), on
 * real files: what the seat controls (name, type, links, size, bytes while they are read) never
 * makes the daemon read anything but that one regular file, or block on it.
 */
const made: string[] = [];
const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), "teamd-pack-file-"));
  made.push(dir);
  return dir;
}

const NAME = packFileName("0123abcd-4567-89ab-cdef-0123456789ab");

/** Opens the seat's file and copies all of it (as the scan's reads and finish would) into `copy` in `dir`; the copy's bytes. */
async function readAll(dir: string, name: string, bytes: number | bigint, during?: (copied: number) => void): Promise<Buffer> {
  const file = await openSeatPackFile(dir, name, BigInt(bytes));
  const copy = await open(join(dir, "copy"), "w+");
  try {
    file.fillInto(copy);
    const buffer = Buffer.alloc(64 * 1024);
    for (let at = 0; at < file.size; at += buffer.length) {
      await file.read(buffer, 0, buffer.length, at);
      during?.(at);
    }
    await file.finish();
  } finally {
    await file.close();
    await copy.close();
  }
  return readFileSync(join(dir, "copy"));
}

async function refusal(read: Promise<unknown>): Promise<PackRejected> {
  const error = await read.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PackRejected);
  expect((error as PackRejected).rule).toBe("push.pack");
  return error as PackRejected;
}

describe("seatPackFile", () => {
  it("copies the whole file byte for byte, its digest over the bytes in order", async () => {
    const dir = folder();
    const body = Buffer.alloc(2.5 * 1024 * 1024);
    for (let i = 0; i < body.length; i++) body[i] = (i * 31 + (i >> 11)) & 0xff;
    writeFileSync(join(dir, NAME), body);
    expect((await readAll(dir, NAME, body.length)).equals(body)).toBe(true);
    writeFileSync(join(dir, NAME), body);
    const digest = createHash("sha256");
    const file = await openSeatPackFile(dir, NAME, BigInt(body.length), digest);
    // Taken: the name is gone once the file is open, and the file is read all the same.
    expect(existsSync(join(dir, NAME))).toBe(false);
    const copy = await open(join(dir, "copy2"), "w+");
    file.fillInto(copy);
    const head = Buffer.alloc(12);
    expect((await file.read(head, 0, 12, 0)).bytesRead).toBe(12);
    expect(head.equals(body.subarray(0, 12))).toBe(true);
    await file.finish();
    await file.close();
    await copy.close();
    expect(digest.digest("hex")).toBe(createHash("sha256").update(body).digest("hex"));
  });

  it("answers every read with the file's bytes there, from what it copied last or from the copy", async () => {
    const dir = folder();
    const body = Buffer.alloc(3 * 1024 * 1024 + 12_345);
    for (let i = 0; i < body.length; i++) body[i] = (i * 131 + (i >> 9)) & 0xff;
    writeFileSync(join(dir, NAME), body);
    const file = await openSeatPackFile(dir, NAME, BigInt(body.length));
    const copy = await open(join(dir, "copy"), "w+");
    try {
      file.fillInto(copy);
      // As the scan reads: windows that start inside the last fill and end past it, small reads
      // at its end, reads back past what is kept in memory, and reads over the end of the file.
      let seed = 7;
      const next = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed % n);
      let at = 0;
      for (let i = 0; i < 400; i++) {
        const kind = next(4);
        const position = kind === 0 ? next(body.length + 100) : kind === 1 ? Math.max(0, at - next(900 * 1024)) : at;
        const length = kind === 3 ? 1 + next(64) : 1 + next(300 * 1024);
        const buffer = Buffer.alloc(length + 8, 0xee);
        const { bytesRead } = await file.read(buffer, 8, length, position);
        const want = body.subarray(Math.min(position, body.length), Math.min(position + length, body.length));
        expect(bytesRead, `read ${i}: ${length} at ${position}`).toBe(want.length);
        expect(buffer.subarray(8, 8 + bytesRead).equals(want), `read ${i}: ${length} at ${position}`).toBe(true);
        expect(buffer.subarray(0, 8).equals(Buffer.alloc(8, 0xee))).toBe(true);
        at = Math.min(body.length, Math.max(at, position + (bytesRead >> 1)));
        // And at the edge of what is kept in memory, byte by byte across it.
        const edge = file.copiedBytes - RECENT_BYTES;
        for (let from = edge - 2; from <= edge + 2; from++) {
          if (from < 0) continue;
          const small = Buffer.alloc(4);
          const got = await file.read(small, 0, 4, from);
          expect(small.subarray(0, got.bytesRead).equals(body.subarray(from, from + got.bytesRead)), `edge read at ${from}`).toBe(true);
        }
      }
      await file.finish();
    } finally {
      await file.close();
      await copy.close();
    }
    expect(readFileSync(join(dir, "copy")).equals(body)).toBe(true);
  });

  it("copies no further than what has been read, and a little more: a file of holes is never copied whole", async () => {
    const dir = folder();
    writeFileSync(join(dir, NAME), "PACK");
    truncateSync(join(dir, NAME), 256 * 1024 * 1024);
    const file = await openSeatPackFile(dir, NAME, BigInt(256 * 1024 * 1024));
    const copy = await open(join(dir, "copy"), "w+");
    try {
      file.fillInto(copy);
      const head = Buffer.alloc(12);
      await file.read(head, 0, 12, 0);
      expect(statSync(join(dir, "copy")).size).toBe(64 * 1024);
      const window = Buffer.alloc(256 * 1024);
      await file.read(window, 0, window.length, 100_000);
      expect(statSync(join(dir, "copy")).size).toBe(100_000 + 256 * 1024);
      // A read of what is copied copies nothing more.
      await file.read(head, 0, 12, 50_000);
      expect(statSync(join(dir, "copy")).size).toBe(100_000 + 256 * 1024);
    } finally {
      await file.close();
      await copy.close();
    }
  });

  it("opens nothing but the one name a pack file has", async () => {
    const dir = folder();
    writeFileSync(join(dir, "x.pack"), "x");
    for (const name of ["x.pack", "../x.pack", `sub/${NAME}`, `${NAME}/..`, NAME.toUpperCase(), `${NAME}\n`]) {
      expect(PACK_FILE_NAME.test(name)).toBe(false);
      expect((await refusal(readAll(dir, name, 1))).reason).toMatch(/name is not \.teamd-pack-UUID\.pack/);
    }
    expect(PACK_FILE_NAME.test(NAME)).toBe(true);
  });

  it("refuses a symbolic link, to a readable file or not, without following it", async () => {
    const dir = folder();
    writeFileSync(join(dir, "secret"), "TEAMD-CANARY-pack-file\n");
    symlinkSync(join(dir, "secret"), join(dir, NAME));
    const error = await refusal(readAll(dir, NAME, 23));
    expect(error.reason).toMatch(/symbolic link/);
    expect(error.reason).not.toContain("CANARY");
  });

  it("refuses a FIFO without waiting for a writer", async () => {
    const dir = folder();
    execFileSync("mkfifo", [join(dir, NAME)]);
    // An open without O_NONBLOCK would wait here for a writer that never comes (vitest's timeout).
    expect((await refusal(readAll(dir, NAME, 0))).reason).toMatch(/not a regular file/);
  });

  it("refuses a socket and a folder", async () => {
    const dir = folder();
    const server = createServer();
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(join(dir, NAME), resolve));
    expect((await refusal(readAll(dir, NAME, 0))).reason).toMatch(/socket/);
    const other = folder();
    execFileSync("mkdir", [join(other, NAME)]);
    expect((await refusal(readAll(other, NAME, 0))).reason).toMatch(/not a regular file/);
  });

  it("refuses a file with a second name (a hard link)", async () => {
    const dir = folder();
    writeFileSync(join(dir, "elsewhere"), "pack");
    linkSync(join(dir, "elsewhere"), join(dir, NAME));
    expect((await refusal(readAll(dir, NAME, 4))).reason).toMatch(/2 names \(a hard link\)/);
  });

  it("refuses a missing file, naming TEAMD_TMP, and a file of another size than the seat said", async () => {
    const dir = folder();
    expect((await refusal(readAll(dir, NAME, 4))).reason).toMatch(/no such file: TEAMD_TMP/);
    writeFileSync(join(dir, NAME), "pack");
    expect((await refusal(readAll(dir, NAME, 5))).reason).toMatch(/is 4 bytes, not the 5/);
    expect((await refusal(readAll(dir, NAME, 2n ** 60n))).reason).toMatch(/said to be/);
  });

  it("refuses a file that shrinks while it is read, and reads no further than its size when it grows", async () => {
    const dir = folder();
    const path = join(dir, NAME);
    writeFileSync(path, Buffer.alloc(3 * 1024 * 1024, 1));
    // The seat's own handle on it: the name goes once the daemon has it open, the file does not.
    const seat = openSync(path, "r+");
    try {
      const shrinking = readAll(dir, NAME, 3 * 1024 * 1024, (at) => {
        if (at === 0) ftruncateSync(seat, 1024 * 1024 + 10);
      });
      expect((await refusal(shrinking)).reason).toMatch(/ended at 1048586 of its 3145728 bytes/);
    } finally {
      closeSync(seat);
    }
    writeFileSync(path, Buffer.alloc(1024, 2));
    const growing = openSync(path, "a");
    try {
      const grown = await readAll(dir, NAME, 1024, () => writeSync(growing, Buffer.alloc(4096, 3)));
      expect(grown.equals(Buffer.alloc(1024, 2))).toBe(true);
    } finally {
      closeSync(growing);
    }
  });
});
