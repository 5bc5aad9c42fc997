/**
 * The /etc/profile a Linux seat sees, bound by teamd over the host's (plan.ts). A login shell —
 * `bash -l`, `sh -l`; Codex CLI runs each of its commands in one — reads /etc/profile, and a
 * distribution's sets PATH to the system's default (Debian's: /usr/local/bin:/usr/bin:/bin:…).
 * That dropped the seat's /run/teamd/bin (`teamd-shim`, and the remote helper `git push teamd`
 * runs) and its ~/.local/bin: in Codex, every `git push teamd` failed with "'remote-teamd' is
 * not a git command". This profile leaves PATH as the seat was started with (plan.ts builds it)
 * and does the rest of what a login profile does: /etc/profile.d's scripts, and an interactive
 * bash's /etc/bash.bashrc.
 *
 * A seat's own ~/.profile still runs after it, and may set PATH as it likes: the seat's home is
 * the seat's, and what it changes there changes only itself.
 */
export const SEAT_PROFILE_INSIDE = "/etc/profile";

export const SEAT_PROFILE = `# /etc/profile of a teamd seat (teamd's src/sandbox/seat-profile.ts), bound over the host's.
# PATH is left as the seat was started with: it holds /run/teamd/bin (teamd-shim, and git's
# remote helper for \`git push teamd\`) and the seat's ~/.local/bin.
if [ -n "\${PS1-}" ]; then
  if [ -n "\${BASH-}" ] && [ "\$BASH" != /bin/sh ] && [ -r /etc/bash.bashrc ]; then
    . /etc/bash.bashrc
  elif [ -z "\${BASH-}" ]; then
    PS1='$ '
  fi
fi
if [ -d /etc/profile.d ]; then
  for teamd_profile_part in /etc/profile.d/*.sh; do
    if [ -r "\$teamd_profile_part" ]; then . "\$teamd_profile_part"; fi
  done
  unset teamd_profile_part
fi
`;
