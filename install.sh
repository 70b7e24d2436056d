#!/bin/sh
# Installs paseo-host-runtime and paseo-workspace-helper from a paseo-host-runtime release.
#
#   curl -fsSL https://github.com/getpaseo/paseo-host-runtime/releases/latest/download/install.sh | sh
#   curl -fsSL .../install.sh | sh -s -- --version 1.2.3 --dir /opt/paseo/bin
#
# Options (environment variable in brackets):
#   --version X.Y.Z   [PASEO_HOST_RUNTIME_VERSION]  default: the latest release
#   --dir DIR         [PASEO_HOST_RUNTIME_INSTALL]  default: ~/.local/bin, or /usr/local/bin as root
#   --platform NAME   [PASEO_HOST_RUNTIME_PLATFORM] skip detection, e.g. linux-x64-baseline
#   --modify-path     also add DIR to PATH in your shell's startup file (never done otherwise)
#   --uninstall       remove exactly what this script installed in DIR
#   [PASEO_HOST_RUNTIME_BASE_URL] default: https://github.com/getpaseo/paseo-host-runtime/releases
#
# What it does: detect the platform; download SHA256SUMS and the archive for it; check the
# archive's SHA-256 against SHA256SUMS (a mismatch or a missing entry stops it before anything is
# installed); put both executables in DIR through a temporary file and a rename; record what it
# installed in DIR/.paseo-host-runtime.installed so --uninstall removes exactly that.
set -eu

BASE_URL_DEFAULT="https://github.com/getpaseo/paseo-host-runtime/releases"
RUNTIME="paseo-host-runtime"
HELPER="paseo-workspace-helper"
MANIFEST=".paseo-host-runtime.installed"
PATH_MARKER="# added by paseo-host-runtime install.sh"
NL='
'

say() { printf '%s\n' "$*"; }
fail() { printf 'install.sh: error: %s\n' "$*" >&2; exit 1; }

usage() {
  cat <<EOF
usage: install.sh [--version X.Y.Z] [--dir DIR] [--platform NAME] [--modify-path] [--uninstall]

  --version X.Y.Z  release to install (default: the latest)      [PASEO_HOST_RUNTIME_VERSION]
  --dir DIR        where to install (default: ~/.local/bin, or    [PASEO_HOST_RUNTIME_INSTALL]
                   /usr/local/bin as root)
  --platform NAME  skip detection: linux-x64, linux-x64-baseline, [PASEO_HOST_RUNTIME_PLATFORM]
                   linux-x64-musl, linux-arm64, linux-arm64-musl, darwin-x64, darwin-arm64
  --modify-path    also add DIR to PATH in your shell's startup file
  --uninstall      remove what this script installed in DIR
Releases come from \$PASEO_HOST_RUNTIME_BASE_URL (default: $BASE_URL_DEFAULT).
EOF
}

parse_args() {
  version="${PASEO_HOST_RUNTIME_VERSION:-}"
  dir="${PASEO_HOST_RUNTIME_INSTALL:-}"
  platform="${PASEO_HOST_RUNTIME_PLATFORM:-}"
  base_url="${PASEO_HOST_RUNTIME_BASE_URL:-$BASE_URL_DEFAULT}"
  modify_path=no
  uninstall=no
  while [ $# -gt 0 ]; do
    case "$1" in
      --version) [ $# -ge 2 ] || fail "--version needs a value"; version="$2"; shift 2 ;;
      --version=*) version="${1#*=}"; shift ;;
      --dir) [ $# -ge 2 ] || fail "--dir needs a value"; dir="$2"; shift 2 ;;
      --dir=*) dir="${1#*=}"; shift ;;
      --platform) [ $# -ge 2 ] || fail "--platform needs a value"; platform="$2"; shift 2 ;;
      --platform=*) platform="${1#*=}"; shift ;;
      --modify-path) modify_path=yes; shift ;;
      --uninstall) uninstall=yes; shift ;;
      -h|--help) usage; exit 0 ;;
      *) fail "unknown option: $1 (see --help)" ;;
    esac
  done
  version="${version#v}"
  case "$version" in
    *[!0-9A-Za-z.-]*) fail "not a version: $version" ;;
  esac
  base_url="${base_url%/}"
}

default_dir() {
  if [ -n "$dir" ]; then return; fi
  if [ "$(id -u)" = 0 ]; then
    dir=/usr/local/bin
  else
    [ -n "${HOME:-}" ] || fail "HOME is not set; pass --dir"
    dir="$HOME/.local/bin"
  fi
}

# x64 builds need AVX2; CPUs without it get the -baseline build.
has_avx2() {
  case "$1" in
    linux) grep -qw avx2 /proc/cpuinfo 2>/dev/null ;;
    darwin) [ "$(sysctl -n hw.optional.avx2_0 2>/dev/null || echo 0)" = 1 ] ;;
  esac
}

is_musl() {
  if ldd --version 2>&1 | grep -qi musl; then return 0; fi
  for loader in /lib/ld-musl-*; do
    if [ -e "$loader" ]; then return 0; fi
  done
  return 1
}

detect_platform() {
  if [ -n "$platform" ]; then return; fi
  os=$(uname -s)
  arch=$(uname -m)
  case "$os" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) fail "unsupported operating system: $os (releases exist for Linux and macOS)" ;;
  esac
  case "$arch" in
    x86_64|amd64) arch=x64 ;;
    aarch64|arm64) arch=arm64 ;;
    *) fail "unsupported CPU architecture: $arch (releases exist for x64 and arm64)" ;;
  esac
  # A shell under Rosetta 2 reports x86_64 on an Apple silicon Mac: install the native build.
  if [ "$os" = darwin ] && [ "$arch" = x64 ] && [ "$(sysctl -n sysctl.proc_translated 2>/dev/null || echo 0)" = 1 ]; then
    arch=arm64
  fi
  platform="$os-$arch"
  if [ "$os" = linux ] && is_musl; then platform="$platform-musl"; fi
  if [ "$arch" = x64 ] && ! has_avx2 "$os"; then platform="$platform-baseline"; fi
}

check_platform() {
  case "$platform" in
    linux-x64|linux-x64-baseline|linux-x64-musl|linux-arm64|linux-arm64-musl|darwin-x64|darwin-arm64) ;;
    *-baseline) fail "unsupported platform: $platform (this x64 CPU lacks AVX2; only glibc Linux has a build for it, linux-x64-baseline)" ;;
    *) fail "unsupported platform: $platform" ;;
  esac
}

# download URL FILE (from an https URL, curl refuses redirects to anything but https)
download() {
  if command -v curl >/dev/null 2>&1; then
    case "$1" in
      https://*) curl -fsSL --retry 2 --proto =https -o "$2" "$1" ;;
      *) curl -fsSL --retry 2 -o "$2" "$1" ;;
    esac || fail "download failed: $1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1" || fail "download failed: $1"
  else
    fail "neither curl nor wget is installed"
  fi
}

# sha256 FILE: prints the file's SHA-256 in hex.
sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d ' ' -f 1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d ' ' -f 1
  else
    fail "neither sha256sum nor shasum is installed: cannot verify the download"
  fi
}

release_url() {
  if [ -n "$version" ]; then
    say "$base_url/download/v$version"
  else
    say "$base_url/latest/download"
  fi
}

# sums_for NAME: the hashes SHA256SUMS lists for NAME (sha256sum's text or binary mode).
sums_for() {
  awk -v n="$1" '$2 == n || $2 == "*" n { print $1 }' "$tmp/SHA256SUMS"
}

# Reads SHA256SUMS: sets archive (its file name), expected (its hash) and, for latest, version.
pick_archive() {
  suffix="-$platform.tar.gz"
  if [ -n "$version" ]; then
    archive="$RUNTIME-$version$suffix"
  else
    # The latest release: its one archive whose name ends in -<platform>.tar.gz.
    archive=$(awk -v p="$RUNTIME-" -v s="$suffix" '{ n = $2; sub(/^\*/, "", n) }
      index(n, p) == 1 && length(n) > length(p s) && substr(n, length(n) - length(s) + 1) == s { print n }' "$tmp/SHA256SUMS")
    case "$archive" in
      "") fail "SHA256SUMS of the latest release lists no archive for $platform" ;;
      *"$NL"*) fail "SHA256SUMS lists more than one archive for $platform" ;;
    esac
    version="${archive#"$RUNTIME-"}"
    version="${version%"$suffix"}"
  fi
  expected=$(sums_for "$archive")
  case "$expected" in
    "") fail "SHA256SUMS has no entry for $archive: refusing to install an unverified archive" ;;
    *"$NL"*) fail "SHA256SUMS lists $archive more than once" ;;
  esac
}

fetch_and_verify() {
  url=$(release_url)
  download "$url/SHA256SUMS" "$tmp/SHA256SUMS"
  pick_archive
  say "Downloading $archive"
  download "$url/$archive" "$tmp/$archive"
  actual=$(sha256 "$tmp/$archive")
  [ "$actual" = "$expected" ] || fail "checksum mismatch for $archive (expected $expected, got $actual): nothing installed"
  mkdir "$tmp/x"
  tar -xzf "$tmp/$archive" -C "$tmp/x" || fail "cannot unpack $archive"
  unpacked="$tmp/x/$RUNTIME-$version-$platform"
  [ -f "$unpacked/$RUNTIME" ] || fail "$archive does not contain $RUNTIME"
}

# install_file NAME: DIR/NAME becomes the unpacked NAME, atomically; unchanged files are left alone.
install_file() {
  [ ! -d "$dir/$1" ] || fail "$dir/$1 is a directory"
  if cmp -s "$unpacked/$1" "$dir/$1"; then
    say "  $dir/$1 is already this version"
    return
  fi
  partial="$dir/.$1.partial.$$"
  cp "$unpacked/$1" "$partial"
  chmod 755 "$partial"
  mv -f "$partial" "$dir/$1"
  partial=""
  say "  installed $dir/$1"
}

# The manifest --uninstall reads: "version V", "file SHA256 NAME" lines, and "rc PATH" when a
# startup file got the PATH line. Written before the files move in, so an install cut short
# still lets --uninstall find them (it removes only files whose hash matches).
write_manifest() {
  {
    say "version $version"
    for name in $installed; do say "file $(sha256 "$unpacked/$name") $name"; done
    if [ -n "$rc_file" ]; then say "rc $rc_file"; fi
  } > "$dir/$MANIFEST.partial.$$"
  mv -f "$dir/$MANIFEST.partial.$$" "$dir/$MANIFEST"
}

prepare_dir() {
  mkdir -p "$dir" || fail "cannot create $dir"
  dir=$(cd "$dir" && pwd -P)
  say "Installing $RUNTIME $version ($platform) into $dir"
  installed="$RUNTIME"
  if [ -f "$unpacked/$HELPER" ]; then installed="$installed $HELPER"; fi
}

install_files() {
  for name in $installed; do install_file "$name"; done
  if [ ! -f "$unpacked/$HELPER" ]; then
    say "Note: this release ships without $HELPER:"
    cat "$unpacked/NOTICE" 2>/dev/null || true
  fi
}

rc_file_for_shell() {
  case "$(basename "${SHELL:-sh}")" in
    zsh) say "$HOME/.zshrc" ;;
    bash) say "$HOME/.bashrc" ;;
    fish) fail "--modify-path does not edit fish configuration; run: fish_add_path $dir" ;;
    *) say "$HOME/.profile" ;;
  esac
}

# The startup file holding our PATH line: the one --modify-path picks, else the one an earlier
# run recorded, else none.
choose_rc_file() {
  rc_file=""
  if [ -f "$dir/$MANIFEST" ]; then
    rc_file=$(sed -n 's/^rc //p' "$dir/$MANIFEST")
  fi
  if [ "$modify_path" != yes ]; then return; fi
  case "$dir" in
    *[\"\`\$\\]*) fail "--modify-path: $dir contains a quote, \$, backquote or backslash; add it to PATH yourself" ;;
  esac
  rc_file=$(rc_file_for_shell)
}

# Only with --modify-path: one marked line in one startup file, added once.
add_path_line() {
  if [ "$modify_path" != yes ]; then return; fi
  path_line="export PATH=\"$dir:\$PATH\" $PATH_MARKER"
  if [ -f "$rc_file" ] && grep -qxF "$path_line" "$rc_file"; then
    say "  $rc_file already adds $dir to PATH"
  else
    say "$path_line" >> "$rc_file"
    say "  added $dir to PATH in $rc_file (open a new shell to use it)"
  fi
}

json_string() {
  printf '"%s"' "$(say "$1" | sed 's/[\\"]/\\&/g')"
}

print_next_steps() {
  say ""
  case ":${PATH:-}:" in
    *":$dir:"*) ;;
    *) if [ -z "$rc_file" ]; then
         say "$dir is not on your PATH. Add it with:"
         say "  export PATH=\"$dir:\$PATH\""
         say "(or rerun this installer with --modify-path to add that line to your shell's startup file)"
         say ""
       fi ;;
  esac
  say "Tell Paseo about the runtime in its config.json (~/.paseo/config.json, or \$PASEO_HOME/config.json):"
  say ""
  say "  {"
  say "    \"workspaceRuntimes\": {"
  say "      \"host\": {"
  say "        \"type\": \"command\","
  say "        \"command\": [$(json_string "$dir/$RUNTIME")],"
  say "        \"options\": {}"
  say "      }"
  say "    }"
  say "  }"
  say ""
  say "Check the host with: $dir/$RUNTIME doctor"
}

# Removes the files listed in DIR's manifest whose content is still what was installed.
uninstall() {
  if [ ! -f "$dir/$MANIFEST" ]; then
    say "Nothing to uninstall: $dir has no $MANIFEST"
    return
  fi
  while IFS= read -r entry; do
    case "$entry" in
      "file "*) entry="${entry#file }"; remove_file "${entry%% *}" "${entry#* }" ;;
      "rc "*) remove_path_line "${entry#rc }" ;;
    esac
  done < "$dir/$MANIFEST"
  rm -f "$dir/$MANIFEST"
  say "Uninstalled $RUNTIME from $dir"
}

# remove_file SHA256 NAME
remove_file() {
  if [ ! -e "$dir/$2" ]; then
    say "  $dir/$2 is already gone"
  elif [ "$(sha256 "$dir/$2")" = "$1" ]; then
    rm -f "$dir/$2"
    say "  removed $dir/$2"
  else
    say "  kept $dir/$2: it changed since it was installed"
  fi
}

remove_path_line() {
  if [ ! -f "$1" ] || ! grep -qF "$PATH_MARKER" "$1"; then return; fi
  grep -vF "$PATH_MARKER" "$1" > "$1.paseo-tmp.$$" || true
  cat "$1.paseo-tmp.$$" > "$1"
  rm -f "$1.paseo-tmp.$$"
  say "  removed the PATH line from $1"
}

cleanup() {
  if [ -n "${partial:-}" ]; then rm -f "$partial"; fi
  if [ -n "${tmp:-}" ]; then rm -rf "$tmp"; fi
}

main() {
  parse_args "$@"
  default_dir
  if [ "$uninstall" = yes ]; then
    uninstall
    return
  fi
  detect_platform
  check_platform
  say "paseo-host-runtime installer: platform $platform, directory $dir"
  partial=""
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/paseo-host-runtime.XXXXXX")
  trap cleanup EXIT
  trap 'exit 1' HUP INT PIPE TERM
  fetch_and_verify
  prepare_dir
  choose_rc_file
  write_manifest
  install_files
  add_path_line
  print_next_steps
}

# Everything runs from here, so a truncated download (curl | sh) executes nothing.
main "$@"
