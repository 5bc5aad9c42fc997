import { compileFilter, encodeFilter, type CompiledRule, type Instruction } from "./seccomp-bpf.js";
import { AUDIT_ARCH, ERRNO, SECCOMP_TABLE, seccompArch, type SeccompArch } from "./seccomp-table.js";
import { refuseContainment, type ContainmentRefusal } from "./refusal.js";

/**
 * The seat's seccomp filter for this host's architecture (pure: the architecture comes in as
 * Node names it). Where teamd has no table for the architecture there is no filter, and a
 * seat does not start without one (§11: containment that cannot be established is refused).
 */
export function seatFilterProgram(arch: SeccompArch): Instruction[] {
  const rules: CompiledRule[] = [];
  for (const family of SECCOMP_TABLE) {
    for (const call of family.syscalls) {
      const nr = call.nr[arch];
      if (nr === undefined) continue;
      rules.push({ nr, errno: ERRNO[family.errno], ...(call.args === undefined ? {} : { args: call.args }) });
    }
  }
  return compileFilter({ arch: AUDIT_ARCH[arch], ...(arch === "x86_64" ? { x32Errno: ERRNO.EPERM } : {}), rules });
}

export function seatFilter(nodeArch: string): { ok: true; bytes: Buffer } | { ok: false; refusal: ContainmentRefusal } {
  const arch = seccompArch(nodeArch);
  if (arch === undefined) {
    return {
      ok: false,
      refusal: refuseContainment(
        "containment.unavailable",
        `teamd has no seccomp filter for this architecture (${nodeArch}); seats run only under one (x64 and arm64 have it)`,
        "run teamd on x86_64 or aarch64",
      ),
    };
  }
  return { ok: true, bytes: encodeFilter(seatFilterProgram(arch)) };
}
