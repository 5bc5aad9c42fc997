import type { ObjectId } from "../../../src/objects/object-id.js";
import type { RootScan } from "../../../src/objects/scan.js";
import type { EtcEntry, HostFacts, HostRoot, PlanInput } from "../../../src/sandbox/plan-types.js";

/**
 * A synthetic seat on a synthetic Debian-like host, as data: the plan compiler is pure, so
 * its tests need no machine. Paths are those of a system-mode daemon (TEAMD_HOME =
 * /var/lib/teamd) with one read-only root, the owner's project checkout.
 */
export const id = (ino: number, dev = 2049): ObjectId => ({ dev: BigInt(dev), ino: BigInt(ino) });

export function scan(root: string, extra: Partial<RootScan> = {}): RootScan {
  return { root, complete: true, sockets: [], aliases: [], linked: [], ...extra };
}

export function root(path: string, ino: number, extra: Partial<RootScan> = {}): HostRoot {
  return { path, id: id(ino), scan: scan(path, extra) };
}

const SEATS = "/var/lib/teamd/teams/alpha/seats/builder";

const ETC: EtcEntry[] = [
  { name: "passwd", kind: "file" },
  { name: "profile", kind: "file" },
  { name: "group", kind: "file" },
  { name: "shadow", kind: "file" },
  { name: "shadow-", kind: "file" },
  { name: "gshadow", kind: "file" },
  { name: "sudoers", kind: "file" },
  { name: "sudoers.d", kind: "dir" },
  { name: "hosts", kind: "file" },
  { name: "resolv.conf", kind: "symlink", target: "../run/systemd/resolve/stub-resolv.conf" },
  { name: "localtime", kind: "symlink", target: "/usr/share/zoneinfo/Etc/UTC" },
  { name: "ld.so.cache", kind: "file" },
  { name: "initctl", kind: "other" },
  { name: "ssh", kind: "dir" },
  { name: "ssh/ssh_config", kind: "file" },
  { name: "ssh/ssh_config.d", kind: "dir" },
  { name: "ssh/ssh_host_ed25519_key", kind: "file" },
  { name: "ssh/ssh_host_ed25519_key.pub", kind: "file" },
  { name: "ssl", kind: "dir" },
  { name: "ssl/certs", kind: "dir" },
  { name: "ssl/openssl.cnf", kind: "file" },
  { name: "ssl/private", kind: "dir" },
  { name: "teamd", kind: "dir" },
];

export function facts(extra: Partial<HostFacts> = {}): HostFacts {
  return {
    system: [
      { path: "/usr", kind: "dir" },
      { path: "/bin", kind: "symlink", target: "usr/bin" },
      { path: "/sbin", kind: "symlink", target: "usr/sbin" },
      { path: "/lib", kind: "symlink", target: "usr/lib" },
      { path: "/lib32", kind: "absent" },
      { path: "/lib64", kind: "symlink", target: "usr/lib64" },
      { path: "/libx32", kind: "absent" },
    ],
    etc: ETC,
    etcListed: ["NetworkManager", "ppp", "security", "ssh", "ssl"].filter((f) => ETC.some((e) => e.name === f)),
    node: "/usr/bin/node",
    shimBundle: "/usr/lib/teamd-shim/shim.mjs",
    seatSocket: { path: "/var/lib/teamd/run/seats/alpha.builder.sock", id: id(900) },
    ...extra,
  };
}

export function baseInput(): PlanInput {
  return {
    seat: { team: "alpha", seat: "builder" },
    user: { uid: 998, gid: 998 },
    writable: {
      repository: root(`${SEATS}/repo`, 101),
      home: root(`${SEATS}/home`, 102),
      tmp: root(`${SEATS}/tmp`, 103),
    },
    readOnly: [root("/home/owner/projects/app", 201)],
    reserved: [
      { path: "/var/lib/teamd/ledger", id: id(301), kind: "dir" },
      { path: "/var/lib/teamd/keys", id: id(302), kind: "dir" },
      { path: "/var/lib/teamd/hubs/alpha.git", id: id(303), kind: "dir" },
      { path: "/home/owner/projects/app/.git", id: id(304), kind: "dir" },
      { path: "/home/owner/projects/app/teamd.yaml", id: id(305), kind: "file" },
      { path: "/usr/lib/node_modules/teamd", id: id(306), kind: "dir" },
      { path: "/var/lib/teamd/flags", id: undefined, kind: "absent" },
    ],
    host: facts(),
    env: {
      allowlist: ["LANG", "TERM", "NO_SUCH_VAR"],
      source: { LANG: "en_US.UTF-8", TERM: "xterm-256color", AWS_SECRET_ACCESS_KEY: "do-not-pass", SSH_AUTH_SOCK: "/run/user/1000/ssh" },
      declared: { RUST_LOG: "info" },
    },
    limits: { memoryBytes: 4 * 1024 ** 3, processes: 512 },
  };
}
