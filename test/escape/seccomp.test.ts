import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createRealSeat, type RealSeat } from "../sandbox/fixture/real-seat.js";
import { SECCOMP_FAMILIES, SECCOMP_FILTERED, seccompProbeHeld, seccompProbeProves } from "../../src/selftest/corpus.js";
import { SECCOMP_PROBE } from "../../src/selftest/seccomp-probe.js";

/**
 * Proves (docs/enforcement.md): "Containment (§11): every seat and every contained git runs
 * under teamd's seccomp filter — io_uring, userfaultfd, the kernel keyring, perf, bpf, new or
 * joined namespaces, clone3, mounts, host administration, the NUMA page movers, personality
 * flags that turn mitigations off, TIOCSTI/TIOCLINUX, the x32 and i386 ABIs". Each probe is a
 * raw syscall from inside a real seat (src/selftest/seccomp-probe.ts, python3's ctypes,
 * as an attacker with no tools would); the control is the same seat, same plan, same launcher
 * with only the filter left out, and shows the kernel's own answer. A probe proves its row
 * when the two differ (the tables are the selftest corpus's, src/selftest/corpus.ts): the filter answers ENOSYS for calls an unprivileged namespace already
 * refuses with EPERM, so the errno is the filter's signature, not the namespace's. A probe the
 * host refuses before the kernel's syscall entry, filter or not (HOST_REFUSED in the corpus: the
 * i386 ABI where the CPU or hypervisor faults `int 0x80`), is held there and proves nothing.
 */
const PYTHON = "/usr/bin/python3";

const FILTERED = SECCOMP_FILTERED;
const FAMILIES = SECCOMP_FAMILIES;

let seat: RealSeat;
beforeEach(async () => {
  seat = await createRealSeat();
});
afterEach(async () => {
  await seat.cleanup();
});

async function probe(filtered: boolean): Promise<Record<string, string>> {
  const script = join(seat.tmp, "seccomp-probe.py");
  if (!existsSync(script)) {
    await writeFile(script, SECCOMP_PROBE, { mode: 0o644 });
  }
  const out = await seat.run([PYTHON, script], { timeoutMs: 20_000, ...(filtered ? {} : { launcher: { withoutSeccompForControl: true } }) });
  expect(out.stderr).toBe("");
  return JSON.parse(out.stdout) as Record<string, string>;
}

const runs = process.platform === "linux" && process.arch === "x64" && existsSync(PYTHON);

describe.runIf(runs)("escape: the seccomp filter, every family, from inside a real seat", () => {
  it("every probe gets the filter's answer; without the filter the kernel answers otherwise (each family proven here)", async () => {
    const [inside, control] = [await probe(true), await probe(false)];
    expect(inside.status_seccomp).toBe("2");
    // bwrap loads the filter into its pid-1 init as well: a seat that ptraces its init gains nothing.
    expect(inside.pid1_seccomp).toBe("2");
    expect(control.status_seccomp).toBe("0");
    for (const [name, answer] of Object.entries(FILTERED)) {
      // A host that faults the call before the kernel's syscall entry (HOST_REFUSED: the i386
      // ABI on a PVM guest) holds it with the filter and without: held, and proves nothing.
      if (inside[name] !== answer && seccompProbeHeld(name, inside, control))
        console.log(`seccomp: ${name} is refused by this host itself (${inside[name]}, and ${control[name]} without the filter)`);
      else expect(inside[name], name).toBe(answer);
    }
    const proven: Record<string, string[]> = {};
    for (const [family, names] of Object.entries(FAMILIES)) {
      proven[family] = names.filter((name) => seccompProbeProves(name, control));
      // Where this kernel lacks a call (no modules, no kexec), it answers ENOSYS itself; the
      // family is still proven by its other probes.
      expect(
        proven[family]!.length,
        `${family}: no probe tells the filter from the kernel (${JSON.stringify(names.map((n) => [n, control[n]]))})`,
      ).toBeGreaterThan(0);
    }
    // What must keep working does: fork, threads, the personality query.
    for (const name of ["fork", "thread", "personality_query"]) expect([inside[name], control[name]], name).toEqual(["ok", "ok"]);
    // The attacks that succeed without the filter, named: the kernel surfaces a seat reached.
    for (const name of [
      "io_uring_setup",
      "userfaultfd",
      "add_key",
      "keyctl",
      "set_mempolicy",
      "move_pages",
      "personality_norandom",
      "ioctl_tiocsti",
      "modify_ldt",
      "fanotify_init",
    ])
      expect(control[name], `${name} without the filter`).toBe("ok");
  }, 60_000);

  it("two seats of one uid cannot pass a secret through the kernel keyring, nor see each other's keys; without the filter they do", async () => {
    const canary = `teamd-keyring-canary-${process.pid}-${Date.now()}`;
    // Seat A leaves a key in its user keyring, readable by its uid (KEYCTL_SETPERM: possessor
    // all, user view+read), and stays; seat B, started while A runs, finds it in /proc/keys and
    // reads its payload by serial (KEYCTL_READ): the channel two colluding seats of different labs would use.
    const put =
      `import ctypes,errno,sys,time; l=ctypes.CDLL(None,use_errno=True); l.syscall.restype=ctypes.c_long; p=sys.argv[1].encode(); ` +
      `k=l.syscall(248, b"user", b"teamd-channel", p, len(p), -4); ` +
      `k>=0 and l.syscall(250, 5, k, 0x3f030000); ` +
      `print("put", "ok" if k>=0 else errno.errorcode[ctypes.get_errno()], flush=True); time.sleep(20)`;
    const get =
      `import ctypes,errno; l=ctypes.CDLL(None,use_errno=True); l.syscall.restype=ctypes.c_long; ` +
      `exec("try: seen=[int(x.split()[0],16) for x in open('/proc/keys') if 'teamd-channel' in x]\\nexcept OSError: seen=[]; print('unreadable')"); print("seen", len(seen)); ` +
      `b=ctypes.create_string_buffer(256); ` +
      `[print("get", b.value.decode() if l.syscall(250, 11, k, b, 256)>0 else errno.errorcode[ctypes.get_errno()]) for k in seen]`;
    // `masks`: false plans the seats without the /proc/keys mask (a control of that defence alone).
    const attempt = async (payload: string, launcher?: { withoutSeccompForControl: true }, masks = true) => {
      const plan = await seat.plan(masks ? undefined : (input) => ({ ...input, host: { ...input.host, procKeyFiles: [] } }));
      const a = await seat.launch(plan, [PYTHON, "-c", put, payload], launcher);
      if (!a.ok) throw new Error(a.refusal.reason);
      const io = a.seat.io;
      if (io.kind !== "pipes") throw new Error("pipes expected");
      io.stdin.end();
      let aOut = "";
      await new Promise<void>((resolve) => {
        io.stdout.setEncoding("utf8").on("data", (chunk: string) => {
          aOut += chunk;
          if (aOut.includes("\n")) resolve();
        });
        io.stdout.once("end", () => resolve());
      });
      try {
        const b = await seat.run([PYTHON, "-c", get], { plan, ...(launcher === undefined ? {} : { launcher }) });
        return { a: aOut.trim(), b: b.stdout.trim() };
      } finally {
        a.seat.kill();
        await a.seat.exit;
      }
    };
    const filtered = await attempt(canary);
    expect(filtered.a).toBe("put EPERM");
    expect(filtered.b).toBe("unreadable\nseen 0");
    // Control: the same two seats without the filter and without the /proc/keys mask share the keyring of their uid.
    const control = await attempt(`${canary}-control`, { withoutSeccompForControl: true }, false);
    expect(control.a).toBe("put ok");
    expect(control.b).toBe(`seen 1\nget ${canary}-control`);
    // The mask alone (no filter): the key is made, but the other seat's /proc/keys lists nothing.
    const masked = await attempt(`${canary}-masked`, { withoutSeccompForControl: true });
    expect(masked.a).toBe("put ok");
    expect(masked.b).toBe("unreadable\nseen 0");
  }, 60_000);

  it("node, git, npm and python3 run under the filter", async () => {
    const script = [
      `node -e 'require("node:fs").writeFileSync(process.env.HOME + "/n", String(require("node:os").cpus().length)); new Worker' 2>/dev/null; node -e 'const {Worker}=require("node:worker_threads"); new Worker("process.exit(0)", {eval:true}).on("exit", c => console.log("node-worker", c))'`,
      `node -e 'require("node:child_process").execFileSync("/bin/true"); require("node:fs").promises.readFile("/etc/hostname").then(() => console.log("node-fs ok"))'`,
      `cd ${seat.tmp} && git init -q g && cd g && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && git gc -q && echo git ok`,
      `npm --version >/dev/null && echo npm ok`,
      `python3 -c 'import subprocess, threading, multiprocessing; print("python", subprocess.run(["true"]).returncode, multiprocessing.Pool(2).map(abs, [-1, -2]))'`,
    ].join("; ");
    const out = await seat.run(["/bin/sh", "-c", script], { timeoutMs: 60_000 });
    expect(out.stdout).toContain("node-worker 0");
    expect(out.stdout).toContain("node-fs ok");
    expect(out.stdout).toContain("git ok");
    expect(out.stdout).toContain("npm ok");
    expect(out.stdout).toContain("python 0 [1, 2]");
  }, 90_000);
});
