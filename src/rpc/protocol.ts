/**
 * The wire protocol generation. A daemon answers only clients that send exactly this
 * value in the `teamd-protocol` metadata of every call (fail closed, §11): a mismatch
 * is refused with rule `rpc.version`, naming both versions. 2: Exec streams its output
 * (it answered once before) and Attach exists. 3: FileRead streams its content back and
 * FileWrite streams it in (a header, then chunks), under the seat socket's 256 KiB receive cap.
 */
export const PROTOCOL_VERSION = 3;

export const PROTOCOL_METADATA_KEY = "teamd-protocol";

/** Metadata key carrying a refusal's rule id from the daemon to the client. */
export const RULE_METADATA_KEY = "teamd-rule";

/**
 * The release version of teamd and teamd-shim, reported in the handshake. Kept as a
 * constant (the shim runs as a bundle with no package.json beside it); a test checks it
 * equals package.json's version.
 */
export const TEAMD_VERSION = "0.1.0";

/**
 * SeatStatus.start_changed for a running seat the policy in force no longer has: it needs no
 * restart (its start would be refused), every act it asks for is refused (`seat.unknown`), and
 * it runs until the owner stops it. status and apply say so rather than "restart needed".
 */
export const START_CHANGED_REMOVED = "removed from the policy in force: teamd refuses its every act";
