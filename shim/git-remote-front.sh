#!/bin/sh
# git-remote-teamd: git's remote helper for a `teamd::` remote, as a seat runs it (issue 26).
#
# git runs this for `git push teamd` and `git fetch teamd`. It runs the helper itself, the shim
# (shim/git-remote.ts, under Node), after one thing that cannot wait for Node to load (~20-30 ms
# in a seat): a push's pack, the longest wait of a push, started here on the push's guess, as
# shim/push-guess.ts guesses it — HEAD's commit, less the commits the daemon was last seen to
# hold (the helper's note of its last push, and the remote's tracking refs). The helper takes
# that pack only if the push git then asks for is exactly it (shim/push-pack.ts adoptFrontPack),
# else throws it away. Where anything here is not as it plainly should be, the helper runs
# alone, as before this front existed.
#
# It holds no policy and reaches nothing the seat does not: it runs as the seat's user, on the
# seat's own repository, and the daemon checks the pack it is sent like any other
# (src/effects/seat-pack-file.ts). POSIX sh, no program of its own but git's rev-parse and
# pack-objects, which a push runs anyway.
set -f
# Set below for the helper alone, and only with the account on fd 4 it names.
unset TEAMD_EARLY_PACK
# The shim: where the seat's environment says, else `teamd-shim` beside the name git ran.
shim=${TEAMD_SHIM:-${0%/*}/teamd-shim}
helper() { exec node "$shim" --git-remote-helper "$@"; }

remote=$1
case $remote in '' | .* | *[!A-Za-z0-9._-]*) helper "$@" ;; esac
case ${TEAMD_TMP:-} in /*) ;; *) helper "$@" ;; esac
[ -n "${GIT_DIR:-}" ] || helper "$@"
# A linked worktree keeps its refs elsewhere: the helper's guess reads none there either.
[ -e "$GIT_DIR/commondir" ] && helper "$@"

# A push: git runs the helper as `git remote-teamd`, itself run by the `git push`. Its command
# line, read by the shell, loses its NUL separators: "git", then "push" among the words. A
# fetch whose words spell "push" gets a pack it does not need, which the helper stops.
stat=
IFS= read -r stat <"/proc/$PPID/stat" || helper "$@"
stat=${stat##*) }
pusher=${stat#* }
pusher=${pusher%% *}
case $pusher in '' | *[!0-9]*) helper "$@" ;; esac
words=
IFS= read -r words <"/proc/$pusher/cmdline"
case $words in *git*push*) ;; *) helper "$@" ;; esac

# HEAD's commit, then the tracking refs' (git resolves them; an unborn HEAD is no guess).
tips=$(git rev-parse 'HEAD^{commit}' --remotes="$remote" 2>/dev/null) || helper "$@"
[ "${#tips}" -le 1048576 ] || helper "$@"
tip=${tips%%
*}
tracking=
case $tips in *"
"*) tracking="${tips#*
}
" ;;
esac
# The helper's note of its last push (push-guess.ts GUESS_FILE): a first line naming it, then
# an object id a line, at most 4,096 of them.
note=$GIT_DIR/teamd-push-guess
noted=
if [ -f "$note" ] && [ ! -h "$note" ]; then
  first=
  IFS= read -r first <"$note"
  if [ "$first" = "# teamd push guess 1" ]; then
    noted=$(sed -n '2,4097p' "$note" 2>/dev/null) || helper "$@"
    [ -z "$noted" ] || noted="$noted
"
  fi
fi
excludes="$noted$tracking"
[ -n "$excludes" ] || helper "$@"
# Object ids a line, nothing else: pack-objects reads them as revisions (the helper checks each).
nl='
'
case $tip$nl$excludes in *[!0-9a-f$nl]*) helper "$@" ;; esac
[ "${#excludes}" -le 1048576 ] || helper "$@"

# The pack file, named as the daemon reads it (src/effects/pack-file-name.ts), the seat's alone.
uuid=
IFS= read -r uuid </proc/sys/kernel/random/uuid || helper "$@"
case $uuid in *[!0-9a-f-]*) helper "$@" ;; ????????-????-????-????-????????????) ;; *) helper "$@" ;; esac
name=".teamd-pack-$uuid.pack"
umask 077
set -C
{ : >"$TEAMD_TMP/$name"; } 2>/dev/null || helper "$@"
set +C

# pack-objects in the background; the helper reads, on its fd 4, the process's id, the
# revisions it was given and, once it has exited, its exit status ("exit N"). The helper's
# stdin (git's) is kept on fd 3 for it. A guess that fails (a noted commit gone since) is the
# helper's to drop, not git's to report: its pack-objects says nothing.
exec 3<&0
{
  git pack-objects --revs --stdout -q >"$TEAMD_TMP/$name" 2>/dev/null <<EOF &
$tip
--not
$excludes
EOF
  pack=$!
  printf 'pid %s\n%s\n--not\n%s.\n' "$pack" "$tip" "$excludes"
  wait "$pack"
  echo "exit $?"
} 3<&- </dev/null | TEAMD_EARLY_PACK=$name exec node "$shim" --git-remote-helper "$@" 4<&0 0<&3 3<&-
