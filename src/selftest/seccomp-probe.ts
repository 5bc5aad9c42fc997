/**
 * The seccomp probe (python3, ctypes: raw syscalls, as an attacker with no tools would): every
 * family of the seat's filter (src/sandbox/seccomp-table.ts), one JSON object out, probe name ->
 * "ok", the errno's name, or "killed:N". Held here as text, once, so that the escape suite
 * (test/escape/seccomp.test.ts, selftest-corpus.test.ts) and `teamd selftest` run the same bytes:
 * each writes it into the seat's tmp and runs it with /usr/bin/python3. x86_64 only.
 */
export const SECCOMP_PROBE = String.raw`# Probes every family of the seat's seccomp filter (src/sandbox/seccomp-table.ts) through raw
# syscalls, as an attacker in a seat would: libc's syscall(2) through ctypes, no helper tool.
# Prints one JSON object: probe name -> "ok", the errno's name, or "killed:N" (the signal).
# Each probe is chosen so that the kernel's own answer without the filter differs from the
# filter's (test/escape/seccomp.test.ts runs it both ways); x86_64 only.
import ctypes, errno, json, mmap, os, sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {}


def sc(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


def in_child(fn):
    """Run fn in a forked child; report what it printed to the pipe, or the signal that killed it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.write(w, fn().encode())
        finally:
            os._exit(0)
    os.close(w)
    text = os.read(r, 256).decode()
    os.close(r)
    _, status = os.waitpid(pid, 0)
    return f"killed:{os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else text


cstr = lambda s: ctypes.c_char_p(s)
buf = ctypes.create_string_buffer(4096)

out["io_uring_setup"] = sc(425, 1, buf)
out["userfaultfd"] = sc(323, 1 | 0o2000000)  # UFFD_USER_MODE_ONLY | O_CLOEXEC: allowed unprivileged since 5.11
out["add_key"] = sc(248, cstr(b"user"), cstr(b"teamd-probe"), cstr(b"x"), 1, -2)  # KEY_SPEC_PROCESS_KEYRING
out["keyctl"] = sc(250, 0, -4, 0)  # KEYCTL_GET_KEYRING_ID of the user keyring
out["request_key"] = sc(249, cstr(b"user"), cstr(b"teamd-absent"), None, 0)
out["perf_event_open"] = sc(298, None, 0, -1, -1, 0)
out["bpf"] = sc(321, 0, None, 0)
out["unshare_newuser"] = sc(272, 0x10000000)
out["unshare_newns"] = sc(272, 0x00020000)
out["clone_newuser"] = sc(56, 0x10000000 | 17, 0, 0, 0, 0)
out["setns"] = sc(308, -1, 0)
out["clone3"] = sc(435, None, 0)
out["mount"] = sc(165, None, None, None, 0, None)
out["umount2"] = sc(166, cstr(b"/"), 0)
out["chroot"] = sc(161, cstr(b"/"))
out["pivot_root"] = sc(155, cstr(b"/"), cstr(b"/"))
out["fsopen"] = sc(430, cstr(b"tmpfs"), 0)
out["open_tree"] = sc(428, -100, cstr(b"/"), 0)
out["init_module"] = sc(175, None, 0, None)
out["finit_module"] = sc(313, -1, None, 0)
out["kexec_load"] = sc(246, 0, 0, None, 0)
out["reboot"] = sc(169, 0, 0, 0, None)
out["swapon"] = sc(167, cstr(b"/nonexistent"), 0)
out["acct"] = sc(163, None)
out["syslog"] = sc(103, 10, None, 0)  # SYSLOG_ACTION_SIZE_BUFFER
out["clock_settime"] = sc(227, 0, None)
out["settimeofday"] = sc(164, None, None)
out["adjtimex"] = sc(159, None)
out["open_by_handle_at"] = sc(304, -1, None, 0)
out["iopl"] = sc(172, 3)
out["set_mempolicy"] = sc(238, 0, None, 0)  # MPOL_DEFAULT
out["move_pages"] = sc(279, 0, 0, None, None, None, 0)
out["mbind"] = sc(237, None, 0, 0, None, 0, 0)
out["personality_norandom"] = in_child(lambda: sc(135, 0x0040000))
out["personality_query"] = sc(135, 0xFFFFFFFF)
out["x32_getpid"] = sc(0x40000000 | 39)
out["modify_ldt"] = sc(154, 0, buf, 16)
out["fanotify_init"] = sc(300, 0x200, 0)  # FAN_REPORT_FID: what an unprivileged caller may ask for


def tiocsti():
    # The probe's own pty, made its controlling terminal: where TIOCSTI would work.
    os.setsid()
    master, slave = os.openpty()
    import fcntl, termios
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    ctypes.set_errno(0)
    r = libc.ioctl(slave, 0x5412, cstr(b"x"))
    return "ok" if r == 0 else errno.errorcode.get(ctypes.get_errno(), "?")


def tioclinux():
    master, slave = os.openpty()
    arg = ctypes.c_char(b"\x0c")
    ctypes.set_errno(0)
    r = libc.ioctl(slave, 0x541C, ctypes.byref(arg))
    return "ok" if r == 0 else errno.errorcode.get(ctypes.get_errno(), "?")


out["ioctl_tiocsti"] = in_child(tiocsti)
out["ioctl_tioclinux"] = in_child(tioclinux)


def i386_getpid():
    # mov eax, 20 (the i386 getpid); int 0x80; ret — a 32-bit syscall from a 64-bit process.
    code = bytes([0xB8, 0x14, 0x00, 0x00, 0x00, 0xCD, 0x80, 0xC3])
    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    r = ctypes.CFUNCTYPE(ctypes.c_int)(address)()
    return "ok" if r > 0 else f"ret:{r}"


out["i386_getpid"] = in_child(i386_getpid)
# What must keep working under the filter: fork, threads, and the calls they make.
out["fork"] = in_child(lambda: "ok")
import threading

t = threading.Thread(target=lambda: None)
t.start()
t.join()
out["thread"] = "ok"
status = {l.split(":")[0]: l.split(":")[1].strip() for l in open("/proc/self/status") if l.startswith("Seccomp")}
out["status_seccomp"] = status.get("Seccomp", "?")
out["pid1_seccomp"] = next((l.split(":")[1].strip() for l in open("/proc/1/status") if l.startswith("Seccomp:")), "?")
print(json.dumps(out))
`;
