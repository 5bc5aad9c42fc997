import type { Instruction } from "../../src/sandbox/seccomp-bpf.js";

/**
 * A classic-BPF interpreter for seccomp programs, written from the kernel's semantics
 * (net/core/filter.c's seccomp subset), so the builder's output is checked by running it
 * rather than by reading it back. Only the opcodes a seccomp filter may use are accepted;
 * anything else, a jump past the end or a fall off the end, throws — the kernel would
 * refuse to load such a program.
 */
export interface SeccompData {
  readonly nr: number;
  readonly arch: number;
  /** Six 64-bit arguments, as bigint. */
  readonly args?: readonly bigint[];
}

export function runFilter(program: readonly Instruction[], data: SeccompData): number {
  const bytes = Buffer.alloc(64);
  bytes.writeInt32LE(data.nr, 0);
  bytes.writeUInt32LE(data.arch >>> 0, 4);
  (data.args ?? []).forEach((arg, i) => bytes.writeBigUInt64LE(BigInt.asUintN(64, arg), 16 + 8 * i));
  let a = 0;
  for (let pc = 0; pc < program.length;) {
    const { code, jt, jf, k } = program[pc]!;
    const jump = (taken: boolean) => {
      pc += 1 + (taken ? jt : jf);
    };
    switch (code) {
      case 0x20: // ld [k]
        if (k % 4 !== 0 || k + 4 > 64) throw new Error(`load of ${k} is outside seccomp_data`);
        a = bytes.readUInt32LE(k);
        pc += 1;
        break;
      case 0x15: // jeq #k
        jump(a === k >>> 0);
        break;
      case 0x35: // jge #k
        jump(a >>> 0 >= k >>> 0);
        break;
      case 0x45: // jset #k
        jump((a & k) >>> 0 !== 0);
        break;
      case 0x06: // ret #k
        return k >>> 0;
      default:
        throw new Error(`opcode 0x${code.toString(16)} at ${pc} is not one the builder emits`);
    }
  }
  throw new Error("the program fell off its end");
}
