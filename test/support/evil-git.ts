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

/**
 * The same as one `&&` list (a heredoc ends a list: a failed step before it would not stop the
 * push): the seat's git answers pack-objects with exactly `objects` (shell words, expanded when
 * the script runs), packed by the real git.
 */
export const evilGitPacking = (objects: string): string =>
  [
    `mkdir -p /tmp/evil && printf '%s\\n' ${objects} > /tmp/evil/objects`,
    `printf '#!/bin/sh\\nif [ "$1" = pack-objects ]; then exec /usr/bin/git pack-objects --stdout -q < /tmp/evil/objects; fi\\nexec /usr/bin/git "$@"\\n' > /tmp/evil/git`,
    "chmod +x /tmp/evil/git",
  ].join(" && ");

/** Push `ref` (refs/heads/REF to itself) through git-remote-teamd by hand, the seat's git from /tmp/evil first on its PATH. */
export const helperPush = (ref: string): string =>
  `printf 'push refs/heads/${ref}:refs/heads/${ref}\\n\\n' | PATH=/tmp/evil:$PATH git-remote-teamd teamd teamd::seat 2>&1`;

/** In the seat: start from the trunk as served, on branch `name`, the index and work tree clean. */
export const freshFromTrunk = (name: string): string => `git fetch -q teamd && rm -f .git/index && git checkout -q -f -B ${name} teamd/main && git clean -qfdx`;
