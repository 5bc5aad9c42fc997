/**
 * A request's id (or a temporary file's unique part), from the global Web Crypto object — the
 * same CSPRNG as node:crypto's randomUUID, which, imported, cost every command that loads it
 * ~2-3 ms of its start (issue 26): the global's modules load only when an id is made.
 */
export const randomUUID = (): string => globalThis.crypto.randomUUID();
