import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileFilter, encodeFilter, RET, X32_SYSCALL_BIT } from "../../src/sandbox/seccomp-bpf.js";
import { seatFilter, seatFilterProgram } from "../../src/sandbox/seccomp-filter.js";
import { AUDIT_ARCH, CLONE_NAMESPACE_FLAGS, ERRNO, SECCOMP_TABLE, TIOCSTI, type SeccompArch } from "../../src/sandbox/seccomp-table.js";
import { runFilter } from "../support/cbpf.js";

const ARCHES: readonly SeccompArch[] = ["x86_64", "aarch64"];
const AUDIT_ARCH_I386 = 0x4000_0003;
const errnoRet = (errno: number) => (RET.ERRNO | errno) >>> 0;

/** The brute-force reference: the table read directly, one rule at a time. */
function reference(arch: SeccompArch, auditArch: number, nr: number, args: readonly bigint[]): number {
  if (auditArch !== AUDIT_ARCH[arch]) return RET.KILL_PROCESS >>> 0;
  if (arch === "x86_64" && nr >= X32_SYSCALL_BIT) return errnoRet(ERRNO.EPERM);
  for (const family of SECCOMP_TABLE) {
    for (const call of family.syscalls) {
      if (call.nr[arch] !== nr) continue;
      const deny = errnoRet(ERRNO[family.errno]);
      const check = call.args;
      if (check === undefined) return deny;
      const low = Number(BigInt.asUintN(32, args[check.arg] ?? 0n));
      if (check.kind === "deny-bits") return (low & check.mask) !== 0 ? deny : RET.ALLOW;
      if (check.kind === "deny-values") return check.values.includes(low) ? deny : RET.ALLOW;
      return check.values.includes(low) ? RET.ALLOW : deny;
    }
  }
  return RET.ALLOW;
}

const nr = (arch: SeccompArch, name: string): number => {
  for (const family of SECCOMP_TABLE) for (const call of family.syscalls) if (call.name === name && call.nr[arch] !== undefined) return call.nr[arch]!;
  throw new Error(`${name} has no number on ${arch}`);
};

describe("the seat's seccomp filter, run in a BPF interpreter", () => {
  for (const arch of ARCHES) {
    const program = seatFilterProgram(arch);
    const run = (name: string | number, args: bigint[] = [], auditArch = AUDIT_ARCH[arch]) =>
      runFilter(program, { arch: auditArch, nr: typeof name === "number" ? name : nr(arch, name), args });

    it(`${arch}: matches the table read directly, for any call number and arguments`, () => {
      const tableNumbers = SECCOMP_TABLE.flatMap((f) => f.syscalls.flatMap((c) => (c.nr[arch] === undefined ? [] : [c.nr[arch]!])));
      const numbers = fc.oneof(
        fc.integer({ min: 0, max: 1100 }),
        fc.constantFrom(...tableNumbers),
        fc.integer({ min: X32_SYSCALL_BIT, max: X32_SYSCALL_BIT + 600 }),
      );
      const arg = fc.oneof(
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        fc.constantFrom(0n, 0x10000000n, 0x3d0f00n, BigInt(TIOCSTI), 0x1_0000_5412n, 0xffffffffn, 0x40000n, 0x20008n),
      );
      const auditArch = fc.oneof(fc.constant(AUDIT_ARCH[arch]), fc.constantFrom(AUDIT_ARCH_I386, AUDIT_ARCH.x86_64, AUDIT_ARCH.aarch64, 0));
      fc.assert(
        fc.property(auditArch, numbers, fc.array(arg, { minLength: 6, maxLength: 6 }), (a, n, args) => {
          expect(runFilter(program, { arch: a, nr: n, args })).toBe(reference(arch, a, n, args));
        }),
        { numRuns: 20_000 },
      );
    });

    it(`${arch}: every call of the table is refused with its family's errno, and common calls pass`, () => {
      for (const family of SECCOMP_TABLE) {
        for (const call of family.syscalls) {
          if (call.nr[arch] === undefined || call.args !== undefined) continue;
          expect(run(call.name), `${call.name}`).toBe(errnoRet(ERRNO[family.errno]));
        }
      }
      const allowed = arch === "x86_64" ? [0, 1, 2, 3, 9, 39, 57, 59, 60, 231, 257, 262] : [56, 57, 63, 64, 93, 94, 172, 221, 222];
      for (const n of allowed) expect(run(n), `syscall ${n}`).toBe(RET.ALLOW);
    });

    it(`${arch}: clone and unshare are refused only with a namespace flag; clone3 answers ENOSYS`, () => {
      // glibc's pthread_create and fork flags.
      expect(run("clone", [0x3d0f00n])).toBe(RET.ALLOW);
      expect(run("clone", [0x1200011n])).toBe(RET.ALLOW);
      for (const flag of [0x80, 0x20000, 0x2000000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000]) {
        expect(run("clone", [BigInt(flag | 0x11)]), `clone 0x${flag.toString(16)}`).toBe(errnoRet(ERRNO.EPERM));
        expect(run("unshare", [BigInt(flag)]), `unshare 0x${flag.toString(16)}`).toBe(errnoRet(ERRNO.EPERM));
      }
      expect(CLONE_NAMESPACE_FLAGS >>> 0).toBe(0x7e020080);
      expect(run("unshare", [0x400n])).toBe(RET.ALLOW); // CLONE_FILES
      expect(run("clone3")).toBe(errnoRet(ERRNO.ENOSYS));
    });

    it(`${arch}: ioctl is refused for TIOCSTI and TIOCLINUX only, whatever the upper bits`, () => {
      expect(run("ioctl", [1n, BigInt(TIOCSTI)])).toBe(errnoRet(ERRNO.EPERM));
      expect(run("ioctl", [1n, 0xdead_0000_5412n])).toBe(errnoRet(ERRNO.EPERM));
      expect(run("ioctl", [1n, 0x541cn])).toBe(errnoRet(ERRNO.EPERM));
      expect(run("ioctl", [1n, 0x5401n])).toBe(RET.ALLOW); // TCGETS
      expect(run("ioctl", [BigInt(TIOCSTI), 0x5413n])).toBe(RET.ALLOW); // the fd is not the request
    });

    it(`${arch}: personality allows the query and the plain personas, not ASLR off`, () => {
      for (const value of [0n, 8n, 0x20000n, 0x20008n, 0xffffffffn]) expect(run("personality", [value])).toBe(RET.ALLOW);
      for (const value of [0x40000n, 0x400000n, 0x40008n]) expect(run("personality", [value])).toBe(errnoRet(ERRNO.EPERM));
    });

    it(`${arch}: any other ABI is killed`, () => {
      expect(run(39, [], AUDIT_ARCH_I386)).toBe(RET.KILL_PROCESS >>> 0);
      expect(run(39, [], arch === "x86_64" ? AUDIT_ARCH.aarch64 : AUDIT_ARCH.x86_64)).toBe(RET.KILL_PROCESS >>> 0);
    });
  }

  it("x86_64: the x32 ABI is refused whole", () => {
    const program = seatFilterProgram("x86_64");
    expect(runFilter(program, { arch: AUDIT_ARCH.x86_64, nr: X32_SYSCALL_BIT + 39 })).toBe(errnoRet(ERRNO.EPERM));
  });

  it("golden: the programs as loaded (a change to the table or the builder shows here)", () => {
    const digest = (arch: SeccompArch) => {
      const bytes = encodeFilter(seatFilterProgram(arch));
      return `${bytes.length / 8} ${createHash("sha256").update(bytes).digest("hex").slice(0, 16)}`;
    };
    expect({ x86_64: digest("x86_64"), aarch64: digest("aarch64") }).toMatchInlineSnapshot(`
      {
        "aarch64": "166 74560d29e9ed8fd5",
        "x86_64": "184 1465b656b785c855",
      }
    `);
  });

  it("fails closed on an architecture without a table", () => {
    const result = seatFilter("riscv64");
    expect(result).toMatchObject({ ok: false, refusal: { rule: "containment.unavailable" } });
    expect(seatFilter(process.arch).ok).toBe(true);
  });
});

describe("the table", () => {
  it("names every family the issue asks for, with a reason, and no number twice per architecture", () => {
    const names = new Set(SECCOMP_TABLE.flatMap((f) => f.syscalls.map((c) => c.name)));
    for (const name of [
      "io_uring_setup",
      "io_uring_enter",
      "io_uring_register",
      "userfaultfd",
      "add_key",
      "keyctl",
      "request_key",
      "perf_event_open",
      "bpf",
      "kexec_load",
      "kexec_file_load",
      "init_module",
      "finit_module",
      "delete_module",
      "mount",
      "umount2",
      "pivot_root",
      "chroot",
      "move_mount",
      "open_tree",
      "fsopen",
      "unshare",
      "setns",
      "clone",
      "clone3",
      "personality",
      "ioctl",
      "acct",
      "quotactl",
      "syslog",
      "swapon",
      "swapoff",
      "reboot",
      "settimeofday",
      "clock_settime",
      "clock_adjtime",
      "adjtimex",
      "mbind",
      "migrate_pages",
      "move_pages",
      "set_mempolicy",
    ])
      expect(names, name).toContain(name);
    for (const family of SECCOMP_TABLE) expect(family.reason.length, family.family).toBeGreaterThan(40);
    for (const arch of ARCHES) {
      const numbers = SECCOMP_TABLE.flatMap((f) => f.syscalls.flatMap((c) => (c.nr[arch] === undefined ? [] : [c.nr[arch]])));
      expect(new Set(numbers).size).toBe(numbers.length);
    }
  });

  // The numbers against the system's own headers, where they are installed (linux-libc-dev).
  const headers: Record<SeccompArch, string> = { x86_64: "/usr/include/x86_64-linux-gnu/asm/unistd_64.h", aarch64: "/usr/include/asm-generic/unistd.h" };
  for (const arch of ARCHES) {
    it.skipIf(!existsSync(headers[arch]))(`${arch}: every number is the one ${headers[arch]} defines`, () => {
      const defined = new Map<string, number>();
      for (const match of readFileSync(headers[arch], "utf8").matchAll(/^#define __NR(?:3264)?_(\w+)\s+(\d+)\s*$/gm)) defined.set(match[1]!, Number(match[2]));
      let checked = 0;
      for (const family of SECCOMP_TABLE) {
        for (const call of family.syscalls) {
          const number = call.nr[arch];
          if (number === undefined || !defined.has(call.name)) continue;
          expect(number, `${arch} ${call.name}`).toBe(defined.get(call.name));
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(45);
    });
  }
});

describe("the builder", () => {
  it("refuses a jump classic BPF cannot encode, two rules for one number, and a bad errno", () => {
    const many = Array.from({ length: 300 }, (_, i) => ({ nr: i, errno: 1, args: { kind: "deny-values" as const, arg: 1, values: [1, 2, 3, 4] } }));
    expect(() => compileFilter({ arch: 1, rules: many })).toThrow(/8-bit offset/);
    expect(() =>
      compileFilter({
        arch: 1,
        rules: [
          { nr: 5, errno: 1 },
          { nr: 5, errno: 38 },
        ],
      }),
    ).toThrow(/two rules/);
    expect(() => compileFilter({ arch: 1, rules: [{ nr: 5, errno: 0 }] })).toThrow(/errno/);
    expect(() => encodeFilter([])).toThrow();
  });
});

describe("the control's switch", () => {
  it("is set by no product code but the selftest's own control seat: only the launcher that reads it and the selftest's world name it", async () => {
    const { readdirSync, readFileSync: read } = await import("node:fs");
    const { join: joinPath } = await import("node:path");
    const { ROOT } = await import("../support/programs.js");
    const named: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(joinPath(ROOT, dir), { withFileTypes: true })) {
        const path = `${dir}/${entry.name}`;
        if (entry.isDirectory()) walk(path);
        else if (/\.(ts|js|mjs)$/.test(entry.name) && read(joinPath(ROOT, path), "utf8").includes("withoutSeccompForControl")) named.push(path);
      }
    };
    for (const dir of ["src", "daemon", "shim", "scripts"]) walk(dir);
    expect(named).toEqual(["src/sandbox/launcher-linux.ts", "src/selftest/world.ts"]);
    // And nothing that starts a seat for a team reaches the selftest's world: its launchers are its own.
    const starters: string[] = [];
    const walkImports = (dir: string) => {
      for (const entry of readdirSync(joinPath(ROOT, dir), { withFileTypes: true })) {
        const path = `${dir}/${entry.name}`;
        if (entry.isDirectory()) walkImports(path);
        else if (/\.ts$/.test(entry.name) && /from "[./]*\/(src\/)?selftest\//.test(read(joinPath(ROOT, path), "utf8"))) starters.push(path);
      }
    };
    for (const dir of ["daemon/server", "daemon/seat", "daemon/lifecycle", "shim"]) walkImports(dir);
    expect(starters).toEqual([]);
  });
});

describe("docs/enforcement.md", () => {
  it("lists every family of the table, each call and its answer", async () => {
    const { readFileSync: read } = await import("node:fs");
    const { join: joinPath } = await import("node:path");
    const { ROOT } = await import("../support/programs.js");
    const docs = read(joinPath(ROOT, "docs/enforcement.md"), "utf8");
    for (const family of SECCOMP_TABLE) {
      const row = docs.split("\n").find((line) => line.startsWith(`| ${family.family} `));
      expect(row, family.family).toBeDefined();
      expect(row).toContain(` ${family.errno} `);
      for (const call of family.syscalls) expect(row, call.name).toContain(`\`${call.name}\``);
    }
  });
});
