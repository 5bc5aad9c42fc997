import { closeSync, openSync, readSync } from "node:fs";

/**
 * A request's id (or a temporary file's unique part): a version 4 UUID from the kernel's CSPRNG,
 * read from /dev/urandom. The global Web Crypto object's randomUUID (the same CSPRNG) loads
 * node's crypto modules the first time it is called: ~3 ms of every `teamd-shim` act and of
 * every push through the remote helper, each a fresh process (issue 26: between the push's call
 * and its header on the wire); node:crypto, imported, ~2-3 ms of every start. Where the device
 * cannot be read (a platform without it), the global's.
 */
export function randomUUID(): string {
  const bytes = Buffer.allocUnsafe(16);
  let read = 0;
  try {
    const fd = openSync("/dev/urandom", "r");
    try {
      while (read < 16) {
        const n = readSync(fd, bytes, read, 16 - read, null);
        if (n <= 0) break;
        read += n;
      }
    } finally {
      closeSync(fd);
    }
  } catch {
    read = 0;
  }
  if (read < 16) return globalThis.crypto.randomUUID();
  return formatUuid4(bytes);
}

/** RFC 9562 §5.4: 122 random bits, the version (4) and the variant (10) in their places. */
export function formatUuid4(random: Uint8Array): string {
  if (random.byteLength !== 16) throw new Error(`a UUID takes 16 random bytes, not ${random.byteLength}`);
  const bytes = Buffer.from(random);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
