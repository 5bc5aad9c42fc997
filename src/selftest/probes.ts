/**
 * The small programs the corpus runs inside a seat (besides the shell and SECCOMP_PROBE), held as
 * text and written into the seat's tmp before it starts: each prints `@ATTACK KEY=VALUE` lines,
 * the one shape the runner reads (corpus.ts parseProbeLines).
 */

/**
 * node NET.js ATTACK KEY=TARGET...: connect to each target in turn and print what it read (its
 * first line) or `error CODE`. TARGET: a path, `@abstract`, `tcp:HOST:PORT`, or `self` (listen on
 * the seat's own loopback and connect to it: the control that the seat's network stack works).
 */
export const NET_PROBE = String.raw`
const net = require("net");
const [attack, ...pairs] = process.argv.slice(2);
function one(target) {
  return new Promise((resolve) => {
    let server;
    const go = (address) => {
      const s = net.connect(address);
      let data = "";
      const end = (text) => { s.destroy(); if (server) server.close(); resolve(text); };
      s.setTimeout(3000, () => end("error TIMEOUT"));
      s.on("data", (d) => { data += String(d); if (data.includes("\n")) end(data.split("\n")[0]); });
      s.on("end", () => end(data.split("\n")[0] || "empty"));
      s.on("error", (e) => end("error " + e.code));
    };
    if (target === "self") {
      server = net.createServer((c) => c.end("self\n")).listen(0, "127.0.0.1", () => go({ host: "127.0.0.1", port: server.address().port }));
    } else if (target.startsWith("tcp:")) {
      const [, host, port] = target.split(":");
      go({ host, port: Number(port) });
    } else go(target.startsWith("@") ? "\0" + target.slice(1) : target);
  });
}
(async () => {
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    console.log("@" + attack + " " + pair.slice(0, at) + "=" + (await one(pair.slice(at + 1))));
  }
})();
`;

/** python3 PTRACE.py KEY=PID...: PTRACE_ATTACH each, print 0 or the errno's name (and detach). */
export const PTRACE_PROBE = String.raw`
import ctypes, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
for pair in sys.argv[1:]:
    key, pid = pair.split("=")
    ctypes.set_errno(0)
    r = libc.ptrace(16, int(pid), 0, 0)
    if r == 0:
        libc.ptrace(17, int(pid), 0, 0)
    print("@ptrace %s=%s" % (key, 0 if r == 0 else errno.errorcode.get(ctypes.get_errno(), "?")), flush=True)
`;

/**
 * python3 KEYRING.py put PAYLOAD [RELEASE_FILE]: add a key named `teamd-selftest:PAYLOAD` holding
 * PAYLOAD to the uid's user keyring (and let the uid read it, where the kernel allows: not from an
 * unprivileged user namespace), print `@keyring put=ok|ERRNO`; hold it until RELEASE_FILE appears
 * (at most 20 s), then invalidate it (the selftest leaves no key behind).
 * python3 KEYRING.py get: list /proc/keys for such keys; print the payloads their names carry (a
 * key's name alone is a channel: /proc/keys shows it to the uid) and those KEYCTL_READ returns.
 */
export const KEYRING_PROBE = String.raw`
import ctypes, errno, os, sys, time
l = ctypes.CDLL(None, use_errno=True)
l.syscall.restype = ctypes.c_long
if sys.argv[1] == "put":
    p = sys.argv[2].encode()
    k = l.syscall(248, b"user", b"teamd-selftest:" + p, p, len(p), -4)
    if k >= 0:
        l.syscall(250, 5, k, 0x3F030000)
    print("@keyring put=" + ("ok" if k >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")), flush=True)
    if k >= 0:
        deadline = time.time() + 20
        while len(sys.argv) > 3 and not os.path.exists(sys.argv[3]) and time.time() < deadline:
            time.sleep(0.05)
        l.syscall(250, 21, k)
else:
    try:
        seen = [(int(x.split()[0], 16), x.split("teamd-selftest:")[1].split(":")[0]) for x in open("/proc/keys") if "teamd-selftest:" in x]
        print("@keyring list=readable")
    except OSError:
        seen = []
        print("@keyring list=unreadable")
    print("@keyring seen=%d" % len(seen))
    print("@keyring got=" + ",".join(name for _, name in seen))
    b = ctypes.create_string_buffer(256)
    read = [b.value.decode() if l.syscall(250, 11, k, b, 256) > 0 else errno.errorcode.get(ctypes.get_errno(), "?") for k, _ in seen]
    print("@keyring read=" + ",".join(read))
`;
