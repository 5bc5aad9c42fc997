/**
 * The base of every Linux seat's root: which host system paths are bound (read-only), what
 * of /etc is left out, and where teamd's own pieces appear inside. This is the source of
 * truth; sandbox-profiles/linux-base.json is its documented copy, and a test fails when the
 * two differ.
 *
 * The root is built from explicit binds, never `--ro-bind / /`: a read-only bind of `/`
 * still exposes every host unix socket (connect(2) ignores a read-only mount; measured,
 * notes/stack.md pitfall 4), and every file of the owner's that no rule named.
 */
export const LINUX_BASE = Object.freeze({
  /** Top-level system paths programs need; each is bound read-only, or recreated when it is a symlink. */
  system: Object.freeze(["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]),
  /** Of these, the compiler refuses a plan where this one is absent: nothing runs without it. */
  required: Object.freeze(["/usr"]),
  /**
   * /etc entries never bound, named relative to /etc. A plain name matches a top-level
   * entry; `dir/pattern` matches children of a folder, whose other children are then bound
   * one by one. `*` matches any run of characters within one name.
   */
  etcDeny: Object.freeze([
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    ".pwd.lock",
    "sudoers",
    "sudoers.d",
    "doas.conf",
    "ssh/*key*",
    "ssl/private",
    "security/opasswd",
    "krb5.keytab",
    "ipsec.secrets",
    "ipsec.d",
    "ppp/*secrets*",
    "NetworkManager/system-connections",
    "wireguard",
    "openvpn",
    "credstore",
    "credstore.encrypted",
    "libvirt",
    "docker",
    // teamd's own system configuration and an etckeeper history (which holds every past /etc).
    "teamd",
    ".git",
    ".etckeeper",
  ]),
  /** Inside the seat. */
  inside: Object.freeze({
    socket: "/run/teamd/shim.sock",
    shim: "/run/teamd/shim",
    /** The shim's lazy part (its commands' code and V8's cache of it), beside it: the front reads it by its own name + SHIM_LAZY_SUFFIX. */
    shimLazy: "/run/teamd/shim.lazy",
    /**
     * The remote helper's front (shim/git-remote-front.sh), beside the shim: what git runs as
     * `git-remote-teamd`, which starts a push's pack before it runs the shim (issue 26).
     */
    gitRemote: "/run/teamd/git-remote-teamd",
    /** The seat's last handoff checkpoint, when it has one (issue 27): read-only. */
    handoff: "/run/teamd/handoff.json",
    proc: "/proc",
    dev: "/dev",
    tmpfs: Object.freeze(["/run"]),
    /** The run's tmp folder (TEAMD_HOME/seats/T/S/tmp), bound read-write: shared by the seat and its execs. */
    tmp: "/tmp",
  }),
  /** Host paths a seat root may never be, lie under, or contain: the plan builds these itself. */
  forbiddenRoots: Object.freeze(["/proc", "/sys", "/dev", "/run", "/var/run", "/etc"]),
  /** PATH inside, before the node runtime's folder when that lies elsewhere. */
  path: Object.freeze(["/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"]),
});

/**
 * The shim's lazy part is the file beside it, named as it is with this suffix
 * (scripts/build-shim.ts): inside a seat /run/teamd/shim.lazy, installed as
 * TEAMD_HOME/shim/teamd-shim-DIGEST.cjs.lazy.
 */
export const SHIM_LAZY_SUFFIX = ".lazy";

/**
 * The remote helper's front is the file beside the shim named as it is with this suffix
 * (scripts/build-shim.ts): inside a seat /run/teamd/git-remote-teamd, installed as
 * TEAMD_HOME/shim/teamd-shim-DIGEST.cjs.git-remote.
 */
export const SHIM_GIT_REMOTE_SUFFIX = ".git-remote";

/** The /etc folders whose children must be listed for the deny list to be applied inside them. */
export function etcFoldersToList(deny: readonly string[] = LINUX_BASE.etcDeny): string[] {
  return [...new Set(deny.filter((pattern) => pattern.includes("/")).map((pattern) => pattern.slice(0, pattern.indexOf("/"))))].sort();
}

/** `*` matches any run of characters inside one name; everything else is literal. */
export function matchesName(pattern: string, name: string): boolean {
  const parts = pattern.split("*");
  if (parts.length === 1) return pattern === name;
  const first = parts[0] as string;
  const last = parts[parts.length - 1] as string;
  if (!name.startsWith(first) || name.length < first.length + last.length || !name.endsWith(last)) return false;
  let at = first.length;
  for (const middle of parts.slice(1, -1)) {
    const found = name.indexOf(middle, at);
    if (found < 0 || found + middle.length > name.length - last.length) return false;
    at = found + middle.length;
  }
  return true;
}

/** Where the shim's command names live inside a bwrap seat (on the tmpfs /run; PATH ends with it). */
export const SHIM_BIN = "/run/teamd/bin";
