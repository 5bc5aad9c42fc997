/**
 * A small classic-BPF assembler for seccomp filters (pure: rules in, bytes out). bwrap's
 * `--seccomp FD` loads the program it reads from FD exactly as seccomp(2) takes it: an array
 * of `struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; }` in the host's byte order.
 *
 * The program a filter compiles to:
 *   1. the architecture check — a syscall made under any other ABI (int 0x80 on x86_64, the
 *      32-bit ARM compat table on aarch64) kills the process, since its numbers mean other
 *      calls and the table below would not see them;
 *   2. on x86_64, the x32 ABI (the same arch, numbers with bit 30 set) is refused whole;
 *   3. every number below the lowest denied one allowed at once (the hottest calls), then
 *      a binary search over the denied numbers (a handful of compares per call, whatever the
 *      table's length — the filter runs on every syscall a seat makes), ending in each rule's
 *      own check of its arguments where it has one;
 *   4. everything else is allowed: this is a deny list over what bubblewrap already leaves
 *      (no capability, no nested user namespace), not an allow list of what programs need.
 *
 * Jumps in classic BPF are forward only and their offsets are 8 bits: the builder checks
 * every offset it emits and throws rather than emit a program that means something else.
 */

export interface Instruction {
  readonly code: number;
  readonly jt: number;
  readonly jf: number;
  readonly k: number;
}

// Opcodes (linux/bpf_common.h), each already combined with its class and mode.
export const BPF = Object.freeze({
  LD_W_ABS: 0x20,
  JEQ_K: 0x15,
  JGE_K: 0x35,
  JSET_K: 0x45,
  RET_K: 0x06,
});

// seccomp(2) return values (linux/seccomp.h).
export const RET = Object.freeze({
  KILL_PROCESS: 0x8000_0000,
  ERRNO: 0x0005_0000,
  ALLOW: 0x7fff_0000,
});

// Offsets in struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6].
export const DATA = Object.freeze({ NR: 0, ARCH: 4 });
/** The low 32 bits of argument i (little-endian hosts: both architectures teamd builds filters for). */
export function argLow(i: number): number {
  return 16 + 8 * i;
}

export const X32_SYSCALL_BIT = 0x4000_0000;

/** What a rule does with the arguments of the call it names. */
export type ArgCheck =
  /** Refused whenever any of `mask`'s bits is set in the argument (clone's and unshare's namespace flags). */
  | { readonly kind: "deny-bits"; readonly arg: number; readonly mask: number }
  /** Refused when the argument (its low 32 bits) is one of `values` (ioctl's TIOCSTI). */
  | { readonly kind: "deny-values"; readonly arg: number; readonly values: readonly number[] }
  /** Refused unless the argument (its low 32 bits) is one of `values` (personality). */
  | { readonly kind: "allow-values"; readonly arg: number; readonly values: readonly number[] };

/** One syscall number and what the filter answers for it. */
export interface CompiledRule {
  readonly nr: number;
  readonly errno: number;
  /** undefined: refused whatever its arguments. */
  readonly args?: ArgCheck;
}

export interface FilterSpec {
  /** AUDIT_ARCH_* of the only ABI allowed. */
  readonly arch: number;
  /** Refuse the x32 ABI (x86_64 only) with this errno. */
  readonly x32Errno?: number;
  readonly rules: readonly CompiledRule[];
}

const ins = (code: number, k: number, jt = 0, jf = 0): Instruction => ({ code, jt, jf, k: k >>> 0 });
const ret = (value: number): Instruction => ins(BPF.RET_K, value);
const retErrno = (errno: number): Instruction => ret(RET.ERRNO | (errno & 0xffff));

export function compileFilter(spec: FilterSpec): Instruction[] {
  const rules = [...spec.rules].sort((a, b) => a.nr - b.nr);
  for (let i = 1; i < rules.length; i++) {
    if (rules[i]!.nr === rules[i - 1]!.nr) throw new Error(`seccomp: syscall ${rules[i]!.nr} has two rules`);
  }
  for (const rule of rules) {
    if (!Number.isInteger(rule.nr) || rule.nr < 0 || rule.nr >= X32_SYSCALL_BIT) throw new Error(`seccomp: bad syscall number ${rule.nr}`);
    if (!Number.isInteger(rule.errno) || rule.errno <= 0 || rule.errno > 4095) throw new Error(`seccomp: bad errno ${rule.errno}`);
  }
  const program: Instruction[] = [ins(BPF.LD_W_ABS, DATA.ARCH), ins(BPF.JEQ_K, spec.arch, 1, 0), ret(RET.KILL_PROCESS), ins(BPF.LD_W_ABS, DATA.NR)];
  if (spec.x32Errno !== undefined) program.push(ins(BPF.JGE_K, X32_SYSCALL_BIT, 0, 1), retErrno(spec.x32Errno));
  // Below the lowest denied number, allowed at once: on x86_64 that is read, write, open,
  // close, the stats, poll, lseek, mmap and the signal calls — the bulk of what programs make.
  if (rules.length > 0 && rules[0]!.nr > 0) program.push(ins(BPF.JGE_K, rules[0]!.nr, 1, 0), ret(RET.ALLOW));
  program.push(...search(rules));
  return program;
}

/** The accumulator holds the syscall number on entry; every path of what this emits returns. */
function search(rules: readonly CompiledRule[]): Instruction[] {
  if (rules.length <= 3) {
    const out: Instruction[] = [];
    for (const rule of rules) {
      const body = action(rule);
      out.push(ins(BPF.JEQ_K, rule.nr, 0, offset(body.length)), ...body);
    }
    out.push(ret(RET.ALLOW));
    return out;
  }
  const middle = Math.floor(rules.length / 2);
  const below = search(rules.slice(0, middle));
  const above = search(rules.slice(middle));
  // nr >= the middle rule's number: skip the lower half.
  return [ins(BPF.JGE_K, rules[middle]!.nr, offset(below.length), 0), ...below, ...above];
}

/** What runs once the number matched (the accumulator is free to be overwritten: every path returns). */
function action(rule: CompiledRule): Instruction[] {
  const deny = retErrno(rule.errno);
  const check = rule.args;
  if (check === undefined) return [deny];
  const load = ins(BPF.LD_W_ABS, argLow(check.arg));
  switch (check.kind) {
    case "deny-bits":
      // Any bit of the mask set: fall through to the refusal; none: jump over it.
      return [load, ins(BPF.JSET_K, check.mask, 0, 1), deny, ret(RET.ALLOW)];
    case "deny-values":
    case "allow-values": {
      // One compare per value; a match jumps past the rest to `matched`, the last miss falls to `unmatched`.
      const values = check.values;
      const compares = values.map((value, i) => ins(BPF.JEQ_K, value, offset(values.length - i), 0));
      const matched = check.kind === "deny-values" ? deny : ret(RET.ALLOW);
      const unmatched = check.kind === "deny-values" ? ret(RET.ALLOW) : deny;
      const out = [load, ...compares];
      return [...out, unmatched, matched];
    }
  }
}

function offset(n: number): number {
  if (n > 255) throw new Error(`seccomp: a jump of ${n} instructions does not fit classic BPF's 8-bit offset`);
  return n;
}

/** The program as seccomp(2) and bwrap --seccomp take it. */
export function encodeFilter(program: readonly Instruction[]): Buffer {
  if (program.length === 0 || program.length > 4096) throw new Error(`seccomp: a program of ${program.length} instructions cannot be loaded (1..4096)`);
  const bytes = Buffer.alloc(program.length * 8);
  program.forEach((instruction, i) => {
    bytes.writeUInt16LE(instruction.code, i * 8);
    bytes.writeUInt8(instruction.jt, i * 8 + 2);
    bytes.writeUInt8(instruction.jf, i * 8 + 3);
    bytes.writeUInt32LE(instruction.k, i * 8 + 4);
  });
  return bytes;
}
