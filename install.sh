#!/usr/bin/env bash
# Install gitst into its own virtual environment and put `git-st` and `gitst` on PATH,
# so `git st ...` works as a git subcommand. Safe to run again: it upgrades in place.
#
#   ./install.sh          install for this user: the commands, the manual and shell completion
#                         (hooks are NOT installed; see `git st hooks install`)
#   ./install.sh --dev    make .venv in this checkout with gitst (editable), the test tools and the mcp extra
#   ./install.sh --no-git-st   install only `gitst` (keeps a `git config alias.st` of yours working)
#
# Environment: PYTHON (default python3), GITST_HOME (default ~/.local/share/gitst),
# GITST_BIN_DIR (default: ~/.local/bin, or the first writable of ~/bin and /usr/local/bin
# that is on PATH), GITST_MAN_DIR (default: <bin dir>/../share/man), GITST_COMPLETION=0 to
# skip the shell completion files.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${PYTHON:-python3}
mode=user
names="git-st gitst"

usage() { sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
for arg in "$@"; do
  case $arg in
    --dev) mode=dev ;;
    --no-git-st) names="gitst" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown option '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done

say() { printf 'install.sh: %s\n' "$*"; }
die() { printf 'install.sh: error: %s\n' "$*" >&2; exit "${2:-4}"; }

command -v git >/dev/null 2>&1 || die "git is not installed"
command -v "$python" >/dev/null 2>&1 || die "$python is not installed (set PYTHON=...)"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || die "gitst needs Python >= 3.10; $python is $("$python" -V 2>&1)"

make_venv() {  # make_venv DIR: create (or repair) a virtual environment with a working pip
  local dir=$1
  if [ -x "$dir/bin/python" ] && "$dir/bin/python" -m pip --version >/dev/null 2>&1; then
    say "using the virtual environment $dir"
    return 0
  fi
  rm -rf "$dir"
  say "creating a virtual environment in $dir"
  if ! "$python" -m venv "$dir" >/dev/null 2>&1; then
    rm -rf "$dir"
    die "cannot create a virtual environment with $python; on Debian/Ubuntu: apt-get install python3-venv"
  fi
}

pip_install() {  # pip_install VENV ARGS...
  local venv=$1; shift
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

if [ "$mode" = dev ]; then
  venv="$here/.venv"
  make_venv "$venv"
  say "installing gitst (editable), the test tools and the extras the tests drive (mcp) with pip (about a minute the first time)"
  pip_install "$venv" --editable "$here[test,mcp]"
  say "dev environment ready: $venv (run the tests with: .venv/bin/python -m pytest)"
  exit 0
fi

home=${GITST_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/gitst}
venv="$home/venv"
mkdir -p "$home"
make_venv "$venv"
say "building and installing gitst and its dependencies with pip (click, pygit2, jsonschema-rs, orjson)"
pip_install "$venv" --upgrade "$here"

on_path() { case ":$PATH:" in *":$1:"*) return 0 ;; esac; return 1; }
bindir=${GITST_BIN_DIR:-}
if [ -z "$bindir" ]; then
  for candidate in "$HOME/.local/bin" "$HOME/bin" /usr/local/bin; do
    if on_path "$candidate" && { [ -w "$candidate" ] || { [ ! -e "$candidate" ] && [ "$candidate" != /usr/local/bin ]; }; }; then
      bindir=$candidate
      break
    fi
  done
  bindir=${bindir:-$HOME/.local/bin}
fi
mkdir -p "$bindir"
for name in $names; do
  ln -sfn "$venv/bin/$name" "$bindir/$name"
done
if [ "$names" = gitst ] && [ "$(readlink "$bindir/git-st" 2>/dev/null)" = "$venv/bin/git-st" ]; then
  rm -f "$bindir/git-st"   # an earlier install put it there; --no-git-st takes it back
  say "removed $bindir/git-st (--no-git-st)"
fi
say "installed $names in $bindir -> $venv"

mandir=${GITST_MAN_DIR:-$(cd "$bindir/.." && pwd)/share/man}
mkdir -p "$mandir/man1"
for page in git-st.1 gitst.1; do   # the wheel ships them in the venv's share/man/man1
  cp "$venv/share/man/man1/$page" "$mandir/man1/$page.tmp"
  mv "$mandir/man1/$page.tmp" "$mandir/man1/$page"
done
say "installed the manual in $mandir/man1 (git st --help, git st help COMMAND)"

if [ "${GITST_COMPLETION:-1}" != 0 ]; then
  # bash-completion loads completions/<command> on first use; git's own completion asks it
  # for completions/git-st when completing `git st`. zsh: a directory on $fpath; fish: its
  # per-user completions directory.
  data=${XDG_DATA_HOME:-$HOME/.local/share}
  bashdir="$data/bash-completion/completions"
  zshdir="$data/zsh/site-functions"
  fishdir="${XDG_CONFIG_HOME:-$HOME/.config}/fish/completions"
  mkdir -p "$bashdir" "$zshdir" "$fishdir"
  "$venv/bin/gitst" completion bash > "$bashdir/gitst"
  ln -sfn gitst "$bashdir/git-st"
  "$venv/bin/gitst" completion zsh > "$zshdir/_gitst"
  "$venv/bin/gitst" completion fish > "$fishdir/gitst.fish"
  say "installed shell completion: $bashdir/gitst (bash), $zshdir/_gitst (zsh; add the directory to"
  say "    \$fpath), $fishdir/gitst.fish (fish); print one with: git st completion bash|zsh|fish"
fi

if ! on_path "$bindir"; then
  say "warning: $bindir is not on your PATH; add it, e.g.:"
  say "    export PATH=\"$bindir:\$PATH\""
fi
found=$(command -v git-st 2>/dev/null || true)
if [ -n "$found" ] && [ "$found" != "$bindir/git-st" ]; then
  say "warning: another git-st comes first on PATH: $found"
fi
alias_st=$(git config --get alias.st 2>/dev/null || true)
if [ -n "$alias_st" ] && [ "$names" != gitst ]; then
  say "warning: git config alias.st is set ('$alias_st'), and git-st on PATH shadows it:"
  say "         'git st' now runs gitst. To keep your alias, run ./install.sh --no-git-st and use 'gitst ...'."
fi
say "done: try  git st --version  (hooks are not installed; in a repo: git st hooks install)"
