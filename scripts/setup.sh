#!/usr/bin/env bash
# scripts/setup.sh — make this machine ready to build, test and run teamd.
#
# Idempotent: installs only what is missing — bubblewrap (Linux seats), git, and the
# toolchain node-gyp needs to compile better-sqlite3 and node-pty from source (g++, make,
# python3) — with apt (Debian/Ubuntu), dnf (Fedora) or brew (macOS), using sudo only when
# not root; then `npm ci`. Says what it did; fails with a message naming what to do.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }
fail() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# --- Node.js: we do not install it (its version matters and distributions lag) ---------
command -v node >/dev/null 2>&1 || fail "Node.js >= 20 is required and 'node' is not on PATH; install it from https://nodejs.org or your version manager, then re-run."
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || fail "Node.js >= 20 is required; found $(node --version). Upgrade Node.js, then re-run."
command -v npm >/dev/null 2>&1 || fail "'npm' is not on PATH (it ships with Node.js); fix the Node.js install, then re-run."

# --- System packages --------------------------------------------------------------------
os=$(uname -s)
missing=()
need() { # need COMMAND PACKAGE
  command -v "$1" >/dev/null 2>&1 || missing+=("$2")
}
case "$os" in
  Linux)
    if command -v apt-get >/dev/null 2>&1; then
      pm=apt; need bwrap bubblewrap; need git git; need g++ g++; need make make; need python3 python3
    elif command -v dnf >/dev/null 2>&1; then
      pm=dnf; need bwrap bubblewrap; need git git; need g++ gcc-c++; need make make; need python3 python3
    else
      pm=none; need bwrap bubblewrap; need git git; need g++ g++; need make make; need python3 python3
    fi
    ;;
  Darwin)
    # Seats use sandbox-exec, which ships with macOS; the compilers come with the
    # Xcode command line tools.
    pm=brew; need git git; need python3 python3
    if ! xcode-select -p >/dev/null 2>&1; then
      fail "the Xcode command line tools are missing (they provide make and a C++ compiler): run 'xcode-select --install', then re-run."
    fi
    ;;
  *) fail "unsupported system '$os': teamd supports Linux and macOS here (Windows: see docs/)." ;;
esac

if [ "${#missing[@]}" -eq 0 ]; then
  say "system packages: all present (bubblewrap/sandbox, git, compiler toolchain)"
else
  sudo_cmd=()
  if [ "$pm" != brew ] && [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || fail "missing ${missing[*]}, not root, and no sudo: install them as root ($pm), then re-run."
    sudo_cmd=(sudo)
    say "not root: using sudo to install ${missing[*]}"
  fi
  case "$pm" in
    apt)
      say "installing with apt: ${missing[*]}"
      export DEBIAN_FRONTEND=noninteractive
      if ! "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
        say "refreshing the apt package lists"
        "${sudo_cmd[@]}" apt-get update -qq || fail "apt-get update failed; check the network or the apt sources."
        "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" || fail "apt-get install ${missing[*]} failed (see above)."
      fi
      ;;
    dnf)
      say "installing with dnf: ${missing[*]}"
      "${sudo_cmd[@]}" dnf install -y -q "${missing[@]}" || fail "dnf install ${missing[*]} failed (see above)."
      ;;
    brew)
      command -v brew >/dev/null 2>&1 || fail "missing ${missing[*]} and Homebrew is not installed: install them (https://brew.sh), then re-run."
      say "installing with brew: ${missing[*]}"
      brew install "${missing[@]}" || fail "brew install ${missing[*]} failed (see above)."
      ;;
    none)
      fail "missing ${missing[*]} and no supported package manager (apt, dnf): install them, then re-run."
      ;;
  esac
  for pkg in "${missing[@]}"; do say "installed $pkg"; done
fi

# --- The seat user (Linux, system mode) -------------------------------------------------
# A daemon running as root runs every seat as this unprivileged system user (as root,
# bwrap --uid N would still map the seat to host uid 0). Created only when we are root on
# Linux and it is missing; an ordinary user's daemon runs seats as that user instead.
if [ "$os" = Linux ] && [ "$(id -u)" -eq 0 ]; then
  if id -u teamd-seat >/dev/null 2>&1; then
    say "seat user: teamd-seat exists"
  elif command -v useradd >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin teamd-seat \
      || fail "useradd teamd-seat failed (see above); create the system user teamd-seat yourself, then re-run."
    say "seat user: created system user teamd-seat"
  else
    fail "useradd is missing: create an unprivileged system user named teamd-seat, then re-run."
  fi
  # One host uid per seat (daemon/host/seat-uids.ts): a block of subordinate ids given to
  # teamd-seat, past every range already given out (and at 0x70000000 at the least: above
  # real users' ids and systemd's container range, below 2^31, which Node's spawn cannot
  # pass as a uid), 65536 seats' worth. Added once; an existing range is kept.
  # One start for both files, so a seat's uid and gid are the same number.
  start=$(cat /etc/subuid /etc/subgid 2>/dev/null | awk -F: 'BEGIN { end = 1879048192 } NF == 3 && $2 + $3 > end { end = $2 + $3 } END { printf "%d", end }')
  for file in /etc/subuid /etc/subgid; do
    if [ -f "$file" ] && grep -q '^teamd-seat:' "$file"; then
      say "seat ids: $file has a range for teamd-seat"
      continue
    fi
    echo "teamd-seat:$start:65536" >>"$file" || fail "cannot write $file: give teamd-seat a subordinate id range yourself (usermod --add-subuids / --add-subgids), then re-run."
    chmod 644 "$file"
    say "seat ids: gave teamd-seat $start-$((start + 65535)) in $file"
  done
  # The owners' group: in system mode the owner is an ordinary user in group teamd, who can
  # reach the control socket, write the stop flags and kill seats without root
  # (docs/service.md). Membership is root-equivalent on this machine; it is never granted
  # here — the owner adds themselves.
  if getent group teamd >/dev/null 2>&1; then
    say "owner group: teamd exists"
  elif command -v groupadd >/dev/null 2>&1; then
    groupadd --system teamd || fail "groupadd teamd failed (see above); create the system group teamd yourself, then re-run."
    say "owner group: created system group teamd (add the owner: usermod -aG teamd <user>)"
  else
    fail "groupadd is missing: create a system group named teamd, then re-run."
  fi
fi

# --- Node packages ----------------------------------------------------------------------
# npm ci: exactly the lockfile, from a clean node_modules. better-sqlite3 compiles from
# source here (its prebuilt download is often unreachable), which takes a minute or two.
# node-gyp needs Node's headers. Where they are installed beside node (a distribution
# or tarball install: PREFIX/include/node), build against them instead of downloading
# them, so a machine that reaches only the npm registry can still compile.
configured_nodedir=$(npm config get nodedir 2>/dev/null || true)
if [ "$configured_nodedir" = "undefined" ] || [ -z "$configured_nodedir" ]; then
  node_prefix=$(node -p 'require("path").resolve(process.execPath, "..", "..")')
  if [ -f "$node_prefix/include/node/common.gypi" ]; then
    export npm_config_nodedir="$node_prefix"
    say "native modules build against the local Node.js headers in $node_prefix/include/node"
  fi
fi
say "npm ci (compiles native modules; this can take a few minutes)"
npm ci --no-audit --no-fund --loglevel=error
say "done: run 'npm run demo' to see teamd answer, 'npm test' for the suite"
