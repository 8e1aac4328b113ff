#!/bin/sh
# gitst hook shim (gitst-hook-shim v1): @HOOK@
# Installed by `git st hooks install`; `git st hooks uninstall` removes it and puts back the
# hook that was here before (kept beside it as @HOOK@.pre-gitst, run first, byte for byte).
# It holds no path: git-st is looked up on PATH each time the hook runs.
hook=@HOOK@
blocking=@BLOCKING@
stdin_data=@STDIN_DATA@
skip_own_add=@SKIP_OWN_ADD@
case $0 in
  */*) chained="${0%/*}/$hook.pre-gitst" ;;  # dirname without a process: this runs on every commit
  *) chained="./$hook.pre-gitst" ;;
esac
status=0
if [ -x "$chained" ]; then
  if [ "$stdin_data" = yes ]; then
    tmp=$(mktemp "${TMPDIR:-/tmp}/gitst-$hook.XXXXXX") || exit 1
    cat >"$tmp"
    "$chained" "$@" <"$tmp"
    status=$?
    exec <"$tmp"
    rm -f -- "$tmp"
  else
    "$chained" "$@"
    status=$?
  fi
  if [ "$status" -ne 0 ] && [ "$blocking" = yes ]; then
    exit "$status"
  fi
fi
if [ "$skip_own_add" = yes ] && [ -n "${GITST_WORKTREE_ADD:-}" ]; then
  exit "$status"  # gitst's own `git worktree add`: it registers the worktree itself
fi
if ! command -v git-st >/dev/null 2>&1; then
  if [ "$(git config --type=bool --get st.hooksRequired 2>/dev/null)" = true ]; then
    echo "gitst: error: git-st is not on PATH and st.hooksRequired is true; the $hook hook cannot run" >&2
    echo "gitst:   fix: install gitst (./install.sh) or put git-st on PATH" >&2
    exit 1
  fi
  echo "gitst: warning: git-st is not on PATH; skipping gitst's $hook hook (git config st.hooksRequired true makes this an error)" >&2
  exit "$status"
fi
if [ "$status" -ne 0 ]; then
  git-st hook "$hook" "$@"
  exit "$status"
fi
exec git-st hook "$hook" "$@"
