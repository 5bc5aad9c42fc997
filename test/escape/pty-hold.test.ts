import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLinuxLauncher } from "../../src/sandbox/launcher-linux.js";
import { PACK_BYTES } from "../../src/sandbox/early-output.js";
import { createRealSeat, type RealSeat } from "../sandbox/fixture/real-seat.js";

/**
 * Proves (docs/enforcement.md, "Records are bounded"): what a pty seat prints before the daemon
 * listens is held bounded in the daemon's memory, not only in bytes. From inside a real seat, a
 * flood of one-byte writes: each pty read can be one byte, and held as one object each they
 * cost ~40 times their bytes (found by an attack, round seven: 1 MiB held as ~200,000 chunks,
 * 38-48 MiB of heap). The hold now packs small chunks: what reaches the first listener is at
 * most 1 MiB in a few buffers per PACK_BYTES.
 */
let seat: RealSeat;
beforeEach(async () => {
  seat = await createRealSeat();
});
afterEach(async () => {
  await seat.cleanup();
});

describe.runIf(process.platform === "linux")("escape: the pty's hold of a seat's first output", () => {
  it("a flood of one-byte writes before anyone listens is held as few buffers, at most 1 MiB", async () => {
    const result = await createLinuxLauncher().launch({
      plan: await seat.plan(),
      command: ["/bin/sh", "-c", "dd if=/dev/zero bs=1 count=3000000 2>/dev/null; sleep 30"],
      io: { kind: "pty", cols: 80, rows: 24 },
    });
    if (!result.ok || result.seat.io.kind !== "pty") throw new Error("no pty seat");
    const { seat: proc } = result;
    const pty = result.seat.io;
    try {
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      let bytes = 0;
      let chunks = 0;
      // The first listener is handed the hold at once, before anything later.
      pty.onData((chunk) => {
        bytes += chunk.length;
        chunks += 1;
      });
      const held = { bytes, chunks };
      // The attack happened: the seat wrote far more small chunks than the hold keeps.
      expect(held.bytes).toBeGreaterThan(100_000);
      expect(held.bytes).toBeLessThanOrEqual(1024 * 1024);
      // Packed: a block per PACK_BYTES of small chunks, a chunk of PACK_BYTES or more held as it
      // came, and each such chunk may seal a partial block before it — at most three buffers
      // per PACK_BYTES (~64 here), where held one a chunk they were ~220,000.
      expect(held.chunks).toBeLessThanOrEqual(3 * Math.ceil(held.bytes / PACK_BYTES) + 1);
    } finally {
      proc.kill();
      await proc.exit;
    }
  }, 30_000);
});
