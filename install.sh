#!/usr/bin/env bash
# shellcheck disable=SC2015 # "a && b || die" means: die unless both hold.
# Installs synartesis, the undo layer for AI agents, for the current user.
#
# From the web (downloads the release binary for this machine, checks its
# SHA-256 against the release's SHA256SUMS, puts it in ~/.local/bin):
#   curl -fsSL https://github.com/synartesis/synartesis/releases/latest/download/install.sh | bash
#   curl -fsSL …/install.sh | bash -s -- --version 0.1.0
#
# From a clone (installs Bun if needed, builds dist/synartesis, symlinks it into
# the first writable folder already on your PATH):
#   ./install.sh              build and link
#   ./install.sh --no-link    only build
#
# It never uses sudo and never edits a shell profile: when it cannot put
# synartesis on your PATH it prints the command that would.
#
# Options:
#   --version X   (download) install release vX instead of the latest
#   --dir D       put synartesis in folder D (download: instead of ~/.local/bin;
#                 clone: link there instead of the first writable PATH folder)
#   --no-link     (clone) build only, link nothing
#   --help        show this help
#
# Environment:
#   SYNARTESIS_RELEASE_URL  base URL the archives and SHA256SUMS are fetched
#                           from, used as is (also with --version), instead of
#                           https://github.com/synartesis/synartesis/releases/
#                           {latest/download | download/vX}. May be file://… or
#                           http://127.0.0.1:… (a mirror, or a local build from
#                           `bun run release`, which writes dist/release/).
#   NO_COLOR                set (non-empty) to turn colour off.
#
# Written for bash 3.2 (macOS) and later: no associative arrays, no empty
# arrays under `set -u`. Everything runs from main() at the very end, so a
# download cut short by the network executes nothing.

set -euo pipefail

REPO_URL="https://github.com/synartesis/synartesis"
README_URL="$REPO_URL#readme"

# ---------------------------------------------------------------- output ---

BOLD="" DIM="" GREEN="" YELLOW="" RESET=""
ERR_RED="" ERR_YELLOW="" ERR_RESET=""
setup_colour() {
  if [ -z "${NO_COLOR:-}" ] && [ -t 1 ]; then
    BOLD=$'\033[1m' DIM=$'\033[2m' GREEN=$'\033[32m' YELLOW=$'\033[33m' RESET=$'\033[0m'
  fi
  if [ -z "${NO_COLOR:-}" ] && [ -t 2 ]; then
    ERR_RED=$'\033[31m' ERR_YELLOW=$'\033[33m' ERR_RESET=$'\033[0m'
  fi
}

say() { printf '%s\n' "$*"; }
step() { printf '%s==>%s %s\n' "$BOLD" "$RESET" "$*"; }
ok() { printf '%s%s%s\n' "$GREEN" "$*" "$RESET"; }
warn() { printf '%swarning:%s %s\n' "$ERR_YELLOW" "$ERR_RESET" "$*" >&2; }
die() {
  printf '%serror:%s %s\n' "$ERR_RED" "$ERR_RESET" "$1" >&2
  shift
  while [ $# -gt 0 ]; do
    printf '  %s\n' "$1" >&2
    shift
  done
  exit 1
}
usage_error() {
  printf 'install.sh: %s\n(see: install.sh --help)\n' "$1" >&2
  exit 2
}

usage() {
  cat <<'EOF'
Install synartesis for the current user (no sudo, no shell-profile edits).

  curl -fsSL https://github.com/synartesis/synartesis/releases/latest/download/install.sh | bash
      download the release binary for this machine into ~/.local/bin
  ./install.sh            (in a clone) build dist/synartesis with Bun and link it
                          into the first writable folder on your PATH

Options:
  --version X   install release vX instead of the latest (download only)
  --dir D       install (download) or link (clone) into folder D
  --no-link     build only, link nothing (clone only)
  --help        show this help

Environment:
  SYNARTESIS_RELEASE_URL  fetch the archives and SHA256SUMS from this base URL
                          (used as is, also with --version; file:// works)
  NO_COLOR                no colour
EOF
}

# ------------------------------------------------------------- platform ---

OS="" ARCH="" VARIANT=""

# Sets OS (linux|darwin), ARCH (x64|arm64) and VARIANT ("", baseline, musl).
detect_platform() {
  local kernel machine
  kernel=$(uname -s)
  machine=$(uname -m)
  case "$kernel" in
    Linux) OS=linux ;;
    Darwin) OS=darwin ;;
    *) die "unsupported operating system: $kernel" \
      "synartesis ships for Linux and macOS (x64 and arm64)." \
      "On Windows, run this inside WSL." ;;
  esac
  case "$machine" in
    x86_64 | amd64) ARCH=x64 ;;
    aarch64 | arm64) ARCH=arm64 ;;
    *) die "unsupported CPU architecture: $machine ($kernel)" \
      "synartesis ships for x64 (x86_64) and arm64 (aarch64)." ;;
  esac

  if [ "$OS" = darwin ] && [ "$ARCH" = x64 ]; then
    # A shell running under Rosetta 2 reports x86_64 on an Apple Silicon Mac:
    # the native arm64 binary is the right one there.
    if [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || true)" = 1 ]; then
      ARCH=arm64
    fi
  fi

  if [ "$OS" = linux ]; then
    if is_musl; then
      # Only x64 has a musl build (Bun ships no musl runtime we build for arm64).
      [ "$ARCH" = x64 ] || die "unsupported platform: musl libc on $ARCH" \
        "synartesis ships a musl build for x64 only; on arm64 it needs glibc."
      VARIANT=musl
    elif [ "$ARCH" = x64 ] && [ -r /proc/cpuinfo ] && ! grep -q avx2 /proc/cpuinfo; then
      # The default x64 build needs AVX2 (Haswell, 2013, and later).
      VARIANT=baseline
    fi
  fi
}

is_musl() {
  local f out
  for f in /lib/ld-musl-*.so.1; do
    [ -e "$f" ] && return 0
  done
  # Captured first: with pipefail, `ldd --version | grep -q` can report the
  # exit status of ldd (musl's ldd exits 1 on --version) instead of grep's.
  if command -v ldd >/dev/null 2>&1; then
    out=$(ldd --version 2>&1 </dev/null || true)
    case "$out" in *musl* | *Musl* | *MUSL*) return 0 ;; esac
  fi
  return 1
}

# ---------------------------------------------------------------- helpers ---

# Absolute, symlink-free path of an existing folder; fails if it is not one.
real_dir() { (cd "$1" 2>/dev/null && pwd -P); }

# The PATH this script was started with (install_from_clone may put Bun's
# folder in front for its own use; links and advice are about the user's PATH).
USER_PATH="$PATH"

# Prints the first folder on PATH that is absolute, exists, is writable, and is
# not inside $1 (a checkout). `.`, empty and relative entries are skipped: a
# link there would only work from one folder.
first_writable_path_dir() {
  local exclude="$1" entry real found="" old_ifs="$IFS"
  IFS=:
  set -f
  for entry in $USER_PATH; do
    case "$entry" in "" | . | [!/]*) continue ;; esac
    [ -d "$entry" ] && [ -w "$entry" ] || continue
    real=$(real_dir "$entry") || continue
    if [ -n "$exclude" ]; then
      case "$real/" in "$exclude"/*) continue ;; esac
    fi
    # A real folder named synartesis there would swallow the link or copy.
    if [ -d "$entry/synartesis" ] && [ ! -L "$entry/synartesis" ]; then continue; fi
    found="$entry"
    break
  done
  set +f
  IFS="$old_ifs"
  [ -n "$found" ] || return 1
  printf '%s\n' "$found"
}

on_path() {
  local dir="$1" entry real want old_ifs="$IFS" hit=1
  want=$(real_dir "$dir") || return 1
  IFS=:
  set -f
  for entry in $USER_PATH; do
    case "$entry" in "" | [!/]*) continue ;; esac
    real=$(real_dir "$entry") || continue
    if [ "$real" = "$want" ]; then hit=0; break; fi
  done
  set +f
  IFS="$old_ifs"
  return $hit
}

# If `synartesis` on PATH is some other file than $1, say so and fail.
warn_if_shadowed() {
  local installed="$1" found
  found=$(PATH="$USER_PATH" command -v synartesis 2>/dev/null || true)
  if [ -n "$found" ] && [ "$found" != "$installed" ]; then
    warn "'synartesis' on your PATH is $found, which comes before $installed."
    return 1
  fi
}

# say_where DIR BINARY ON_PATH_MESSAGE: whether DIR is on PATH (and if not, the
# line to run), then the next command, by name when PATH finds this binary.
say_where() {
  local dir="$1" binary="$2" on_path_message="$3"
  if on_path "$dir"; then
    say "$on_path_message"
    if warn_if_shadowed "$binary"; then print_next_steps "synartesis"; else print_next_steps "$binary"; fi
  else
    say "${YELLOW}$dir is not on your PATH.${RESET} To use synartesis by name, run (and add it to your shell profile to keep it):"
    say "  export PATH=\"$dir:\$PATH\""
    print_next_steps "$binary"
  fi
}

print_next_steps() {
  local cmd="$1"
  say ""
  say "${BOLD}Next:${RESET}"
  say "  $cmd --help"
  say "  then follow the README walkthrough (toy CRM → damage → undo): $README_URL"
}

# ------------------------------------------------------------ from clone ---

BUN=""

ensure_bun() {
  if command -v bun >/dev/null 2>&1; then
    BUN=$(command -v bun)
    return 0
  fi
  if command -v npm >/dev/null 2>&1; then
    step "Bun is not installed: installing it with npm install -g bun"
    # npm 11 may warn that it skipped bun's install script; the package's own
    # launcher still works, which is checked right after.
    if npm install -g bun </dev/null; then
      if command -v bun >/dev/null 2>&1; then
        BUN=$(command -v bun)
      else
        local prefix
        prefix=$(npm prefix -g 2>/dev/null </dev/null || true)
        [ -n "$prefix" ] && [ -x "$prefix/bin/bun" ] && BUN="$prefix/bin/bun"
      fi
      if [ -n "$BUN" ] && "$BUN" --version >/dev/null 2>&1 </dev/null; then
        return 0
      fi
      warn "npm installed bun, but it does not run here; trying Bun's own installer."
      BUN=""
    else
      warn "npm install -g bun failed (without sudo npm may not write its global folder); trying Bun's own installer."
    fi
  fi
  command -v curl >/dev/null 2>&1 || die "Bun is not installed and neither npm nor curl is available to install it." \
    "Install Bun (https://bun.sh), then run ./install.sh again."
  step "Installing Bun with its official installer (https://bun.sh/install)"
  # Bun's installer edits the profile of the shell named in $SHELL; with a
  # shell it does not know it only prints advice, so nothing is edited.
  curl -fsSL https://bun.sh/install </dev/null | SHELL=/bin/sh bash >/dev/null ||
    die "Bun's installer failed." "Install Bun (https://bun.sh), then run ./install.sh again."
  BUN="${BUN_INSTALL:-${HOME:-}/.bun}/bin/bun"
  [ -x "$BUN" ] || die "Bun's installer finished but $BUN is missing." \
    "Install Bun (https://bun.sh), then run ./install.sh again."
}

install_from_clone() {
  local root="$1" no_link="$2" dir="$3"
  local binary="$root/dist/synartesis"

  ensure_bun
  # This process only: `bun run build` calls `bun` by name.
  if ! command -v bun >/dev/null 2>&1; then
    PATH="$(dirname "$BUN"):$PATH"
    export PATH
  fi
  say "${DIM}using $BUN (bun $("$BUN" --version </dev/null))${RESET}"

  step "Installing dependencies (bun install --frozen-lockfile)"
  (cd "$root" && "$BUN" install --frozen-lockfile </dev/null) ||
    die "bun install --frozen-lockfile failed in $root."
  # Bun runs no dependency's install script unless told to trust it, and says so.
  say "${DIM}(A \"Blocked 1 postinstall\" line above is expected: the script is the MCP Inspector's, a"
  say " test-only dependency; it installs the Inspector's own clients in its source checkout and"
  say " does nothing when the Inspector is a dependency, so nothing is missing.)${RESET}"
  step "Building $binary (bun run build)"
  (cd "$root" && "$BUN" run build </dev/null) || die "bun run build failed in $root."
  [ -x "$binary" ] || die "the build finished but $binary is missing."
  ok "Built $binary ($("$binary" --version </dev/null 2>/dev/null || echo "version unknown"))"

  if [ "$no_link" = 1 ]; then
    say "Not linked (--no-link)."
    print_next_steps "$binary"
    return 0
  fi

  if [ -n "$dir" ]; then
    mkdir -p "$dir" 2>/dev/null && [ -w "$dir" ] || die "cannot write to $dir (from --dir)."
  else
    dir=$(first_writable_path_dir "$root") || dir=""
  fi
  if [ -z "$dir" ]; then
    say ""
    say "${YELLOW}No writable folder on your PATH to link synartesis into${RESET} (this script uses no sudo)."
    say "Run this to use it in this shell (add the same line to your shell profile to keep it):"
    say "  export PATH=\"$root/dist:\$PATH\""
    say "or link it into a folder on your PATH yourself:"
    say "  ln -sf \"$binary\" /usr/local/bin/synartesis"
    print_next_steps "$binary"
    return 0
  fi

  ln -sfn "$binary" "$dir/synartesis" || die "could not create the link $dir/synartesis."
  ok "Linked $dir/synartesis -> $binary"
  say_where "$dir" "$dir/synartesis" "$dir is on your PATH; a rebuild (bun run build) updates what the link runs."
}

# -------------------------------------------------------------- download ---

TMP_DIR=""
PARTIAL=""
cleanup() {
  [ -n "$PARTIAL" ] && rm -f "$PARTIAL"
  [ -n "$TMP_DIR" ] && rm -rf "$TMP_DIR"
  return 0
}

# fetch URL FILE: curl (any scheme it knows, file:// included) or wget.
fetch() {
  local url="$1" out="$2"
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 2 -o "$out" "$url" </dev/null
  elif command -v wget >/dev/null 2>&1; then
    case "$url" in
      file://*) cp "${url#file://}" "$out" ;; # wget has no file://
      *) wget -q -O "$out" "$url" </dev/null ;;
    esac
  else
    die "neither curl nor wget is installed; install one and run this again."
  fi
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | awk '{print $1}'
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | awk '{print $1}'
  else
    return 1
  fi
}

install_download() {
  local version="$1" dir="$2"
  local asset base label expected actual extracted dest installed_version

  asset="synartesis-$OS-$ARCH${VARIANT:+-$VARIANT}.tar.gz"
  version="${version#v}"
  if [ -n "${SYNARTESIS_RELEASE_URL:-}" ]; then
    base="${SYNARTESIS_RELEASE_URL%/}"
  elif [ -n "$version" ]; then
    base="$REPO_URL/releases/download/v$version"
  else
    base="$REPO_URL/releases/latest/download"
  fi
  # Which release this is, when known: a base from SYNARTESIS_RELEASE_URL holds
  # whatever was put there (a mirror, a local build), not necessarily the latest.
  label="${version:+ (v$version)}"
  if [ -z "$label" ] && [ -z "${SYNARTESIS_RELEASE_URL:-}" ]; then
    label=" (the latest release)"
  fi

  command -v tar >/dev/null 2>&1 || die "tar is not installed; install it and run this again."
  command -v sha256sum >/dev/null 2>&1 || command -v shasum >/dev/null 2>&1 ||
    die "neither sha256sum nor shasum is installed, so the download cannot be verified; nothing was installed."

  TMP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/synartesis-install.XXXXXX")
  trap cleanup EXIT
  trap 'cleanup; exit 130' INT TERM

  step "Downloading $asset$label from $base"
  fetch "$base/$asset" "$TMP_DIR/$asset" ||
    die "could not download $base/$asset" \
      "Is there a release for $OS-$ARCH${VARIANT:+-$VARIANT}${version:+ at version $version}? Releases: $REPO_URL/releases"
  fetch "$base/SHA256SUMS" "$TMP_DIR/SHA256SUMS" || die "could not download $base/SHA256SUMS; nothing was installed."

  expected=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1; exit }' "$TMP_DIR/SHA256SUMS")
  [ -n "$expected" ] || die "SHA256SUMS from $base lists no $asset; nothing was installed."
  actual=$(sha256_of "$TMP_DIR/$asset")
  if [ "$actual" != "$expected" ]; then
    rm -f "$TMP_DIR/$asset"
    die "checksum did not match for $asset: the download is corrupt or was tampered with. Nothing was installed." \
      "expected $expected (SHA256SUMS)" \
      "got      $actual" \
      "The download was deleted; run this again, and if it happens again please report it: $REPO_URL/issues"
  fi
  say "${DIM}sha256 $actual ok${RESET}"

  mkdir "$TMP_DIR/x"
  tar -xzf "$TMP_DIR/$asset" -C "$TMP_DIR/x" </dev/null || die "could not unpack $asset; nothing was installed."
  extracted="$TMP_DIR/x/synartesis"
  [ -f "$extracted" ] && [ ! -L "$extracted" ] || die "$asset holds no file named synartesis; nothing was installed."
  chmod 755 "$extracted"

  if [ -n "$dir" ]; then
    mkdir -p "$dir" 2>/dev/null && [ -w "$dir" ] || die "cannot write to $dir (from --dir); nothing was installed."
  elif [ -n "${HOME:-}" ] && mkdir -p "$HOME/.local/bin" 2>/dev/null && [ -w "$HOME/.local/bin" ]; then
    dir="$HOME/.local/bin"
  else
    dir=$(first_writable_path_dir "") ||
      die "cannot create ~/.local/bin and no folder on your PATH is writable; nothing was installed." \
        "Run this again with --dir pointing at a folder you can write to."
  fi
  dir=$(real_dir "$dir")

  # Copy next to the destination, then rename over it: a running or half-copied
  # synartesis is never left in place.
  dest="$dir/synartesis"
  PARTIAL="$dir/.synartesis.install.$$"
  cp "$extracted" "$PARTIAL" || die "could not write to $dir; nothing was installed."
  chmod 755 "$PARTIAL"
  mv -f "$PARTIAL" "$dest" || die "could not move synartesis into $dir; nothing was installed."
  PARTIAL=""

  if ! installed_version=$("$dest" --version 2>&1 </dev/null); then
    warn "synartesis was installed to $dest, but it does not run on this machine:"
    printf '%s\n' "$installed_version" | sed 's/^/  /' >&2
    if [ "$VARIANT" = musl ]; then
      warn "on Alpine and other musl systems it needs the C++ runtime: apk add libstdc++ libgcc"
    fi
    exit 1
  fi
  ok "Installed $installed_version to $dest"

  say_where "$dir" "$dest" "$dir is on your PATH."
}

# ------------------------------------------------------------------ main ---

# The folder of this script when it is a file (empty when piped into bash).
script_dir() {
  local source="${BASH_SOURCE[0]:-}"
  case "$source" in "" | bash | -bash | */bash) return 0 ;; esac
  [ -f "$source" ] || return 0
  real_dir "$(dirname "$source")" || true
}

is_clone() {
  local dir="$1"
  [ -n "$dir" ] && [ -f "$dir/src/main.ts" ] && [ -f "$dir/package.json" ] &&
    grep -q '"name": *"synartesis"' "$dir/package.json"
}

main() {
  local no_link=0 version="" dir="" here
  setup_colour
  while [ $# -gt 0 ]; do
    case "$1" in
      --help | -h) usage; exit 0 ;;
      --no-link) no_link=1 ;;
      --version)
        [ $# -ge 2 ] && [ -n "$2" ] || usage_error "--version needs a version, e.g. --version 0.1.0"
        version="$2"; shift ;;
      --version=*) version="${1#--version=}" ;;
      --dir)
        [ $# -ge 2 ] && [ -n "$2" ] || usage_error "--dir needs a folder"
        dir="$2"; shift ;;
      --dir=*) dir="${1#--dir=}" ;;
      *) usage_error "unknown option: $1" ;;
    esac
    shift
  done

  detect_platform

  here=$(script_dir)
  if is_clone "$here"; then
    if [ -n "$version" ]; then
      usage_error "--version picks a release to download; in a clone, ./install.sh builds the checked-out source. To install a release, run: curl -fsSL $REPO_URL/releases/latest/download/install.sh | bash -s -- --version $version"
    fi
    step "Installing synartesis from the clone at $here ($OS-$ARCH)"
    install_from_clone "$here" "$no_link" "$dir"
  else
    if [ "$no_link" = 1 ]; then
      warn "--no-link only means something in a clone (build without linking); downloading as usual."
    fi
    step "Installing synartesis for $OS-$ARCH${VARIANT:+ ($VARIANT)}"
    install_download "$version" "$dir"
  fi
}

main "$@"
