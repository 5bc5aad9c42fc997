#!/usr/bin/env bash
# scripts/agents/install.sh — install the agent CLIs the suite runs in seats
# (test/agents/), at the versions pinned in scripts/agents/pinned.json, into a cache outside
# the repository: ${TEAMD_AGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/teamd/agents}/NAME@VERSION.
#
# Idempotent (an installed version is kept); only the npm registry is reached, with install
# scripts off (nothing a package ships runs at install). Prints where each CLI is.
set -euo pipefail
cd "$(dirname "$0")/../.."

say() { printf 'agents: %s\n' "$*"; }
cache="${TEAMD_AGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/teamd/agents}"
platform="$(node -p 'process.platform + "-" + process.arch')"

node -e '
  const pinned = require("./scripts/agents/pinned.json");
  // A native binary for this platform, or a script any platform runs with node.
  for (const [name, cli] of Object.entries(pinned)) console.log([name, cli.package, cli.version, cli.native?.[process.argv[1]] ?? cli.script ?? ""].join("\t"));
' "$platform" | while IFS=$'\t' read -r name package version native; do
  # $native: the file the test runs (a native binary for this platform, or a node script).
  if [ -z "$native" ]; then
    say "$name: no native build pinned for $platform; skipped (its test will say so)"
    continue
  fi
  dir="$cache/$name@$version"
  bin="$dir/node_modules/$native"
  if [ -f "$bin" ]; then
    say "$name $version: already in $dir"
    continue
  fi
  mkdir -p "$cache"
  partial="$(mktemp -d "$cache/.$name.XXXXXX")"
  say "$name: installing $package@$version from the npm registry"
  (cd "$partial" && npm install --no-save --no-audit --no-fund --ignore-scripts --loglevel=error --prefix "$partial" "$package@$version" >/dev/null)
  [ -f "$partial/node_modules/$native" ] || { rm -rf "$partial"; printf 'agents: error: %s installed without %s\n' "$package@$version" "$native" >&2; exit 1; }
  rm -rf "$dir"
  mv "$partial" "$dir"
  say "$name $version: $bin"
done
