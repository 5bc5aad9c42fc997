import { utf8Bytes } from "./bounded-text.js";
import type { SubmitRequest } from "./dispatch.js";

/**
 * What a record will cost the store, estimated before it exists (issue 20, "Records are
 * bounded": a seat's acts have a byte budget, daemon/seat/act-budget.ts). Encoding a draft to
 * measure it would cost a second protobuf encoding on every gated request, so the estimate
 * walks the draft instead: every string by its UTF-8 length, every byte array by its length,
 * every other scalar as 8 bytes, each field and element with a small tag cost — an upper bound
 * of protobuf's own sizes for the same values (varints and tags are never larger than this).
 *
 * A record also carries what the draft does not: its header's chain hash, its signer's key
 * and signature, its seq and time. RECORD_OVERHEAD_BYTES stands for those; it is checked
 * against records a real ledger stored (test/ledger/record-size.test.ts: the smallest act's
 * records are 149 and 188 bytes whole, estimated 354 and 387; a 4 KiB note's intent 4,296,
 * estimated 4,507).
 */
export const RECORD_OVERHEAD_BYTES = 256;

/** Per field or element: a tag and a length prefix (protobuf: at most a few bytes each). */
const FIELD_BYTES = 4;

/** How deep the walk goes: drafts are a few levels deep; anything deeper is counted as a flat 64 bytes (a draft is daemon-built, never seat-shaped). */
const MAX_DEPTH = 12;

export function approxBytes(value: unknown, depth = 0): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === "string") return FIELD_BYTES + utf8Bytes(value);
  if (value instanceof Uint8Array) return FIELD_BYTES + value.length;
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean") return FIELD_BYTES + 8;
  if (typeof value !== "object") return 0;
  if (depth >= MAX_DEPTH) return 64;
  let sum = FIELD_BYTES;
  if (Array.isArray(value)) {
    for (const item of value) sum += approxBytes(item, depth + 1);
    return sum;
  }
  for (const item of Object.values(value as Record<string, unknown>)) sum += approxBytes(item, depth + 1);
  return sum;
}

/** One record of this draft (or payload), overhead included. */
export function approxRecordBytes(draft: unknown): number {
  return RECORD_OVERHEAD_BYTES + approxBytes(draft);
}

/**
 * An act's two records before either exists (not counting what they do not store: the
 * canonical request bytes, of which the intent keeps a 32-byte digest, and the callback): its intent whole, and its outcome (which repeats the target, request id and domain) but for
 * its note and reply.
 */
export function approxActBytes(req: SubmitRequest): { intent: number; outcome: number } {
  const { request: _request, onQueued: _onQueued, ...stored } = req;
  const domain = (req.payload as { domain?: unknown } | undefined)?.domain;
  return {
    intent: approxRecordBytes(stored) + FIELD_BYTES + 32,
    outcome: approxRecordBytes([req.target, req.requestId, domain, req.actor, req.action]),
  };
}

/** The outcome's note and reply, once the effect has given them. */
export function approxOutcomeDetail(note: string, reply: Uint8Array): number {
  return approxBytes([note, reply]);
}
