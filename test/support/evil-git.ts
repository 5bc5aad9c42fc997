/**
 * A seat's own `git`, first on the PATH git-remote-teamd is run with (by hand, since git itself
 * puts its own exec-path first): the helper runs it for pack-objects, so the seat chooses which
 * bytes travel. A shell script for `h.inSeat`, writing /tmp/evil/git.
 */
export const evilGit = (packObjects: string): string =>
  [
    "mkdir -p /tmp/evil && cat > /tmp/evil/git <<'EOS'",
    "#!/bin/sh",
    'if [ "$1" = pack-objects ]; then',
    packObjects,
    "exit 0",
    "fi",
    'exec /usr/bin/git "$@"',
    "EOS",
    "chmod +x /tmp/evil/git",
  ].join("\n");
