#!/bin/sh
# Installs paseo-host-runtime and paseo-workspace-helper from a paseo-host-runtime release.
#
#   curl -fsSL https://github.com/getpaseo/paseo-host-runtime/releases/latest/download/install.sh | sh
#   curl -fsSL .../install.sh | sh -s -- --version 1.2.3 --dir /opt/paseo/bin
#   curl -fsSL .../install.sh | sh -s -- --helper-from FILE --helper-sha256 HEX   # Paseo's helper
#   ssh HOST 'curl -fsSL .../install.sh | sh'
#
# Options: see usage() below, or --help.
#
# What it does: detect the platform; download the release's SHA256SUMS; stop there when DIR
# already holds that version intact; otherwise download the archive and check its SHA-256
# against SHA256SUMS; check the --helper-from file's SHA-256 (a mismatch, a missing entry or no
# digest at all stops it before anything is installed); with --helper-npm (or an npm tarball as
# --helper-from) install the helper package with npm into a private prefix first; put the
# executables in DIR through a temporary file and a rename (the npm helper: a symlink to the
# prefix's bin); record what it installed in DIR/.paseo-host-runtime.installed so --uninstall
# removes exactly that; run the installed `--version` and `doctor --quiet`.
set -eu

BASE_URL_DEFAULT="https://github.com/getpaseo/paseo-host-runtime/releases"
RUNTIME="paseo-host-runtime"
HELPER="paseo-workspace-helper"
# The helper as Paseo publishes it on npm, and the prefix directories it is installed into
# beside the runtime (DIR/.paseo-workspace-helper.npm.N; DIR/paseo-workspace-helper links into one).
HELPER_PACKAGE="@getpaseo/workspace-helper"
NPM_PREFIX=".$HELPER.npm"
MANIFEST=".paseo-host-runtime.installed"
PATH_MARKER="# added by paseo-host-runtime install.sh"
NL='
'

say() { printf '%s\n' "$*"; }
fail() { printf 'install.sh: error: %s\n' "$*" >&2; exit 1; }
usage_error() { printf 'install.sh: error: %s\n\n' "$*" >&2; usage >&2; exit 2; }

usage() {
  cat <<EOF
usage: install.sh [--version X.Y.Z] [--dir DIR] [--platform NAME] [--modify-path]
                  [--helper-from PATH|URL [--helper-sha256 HEX] | --helper-npm [VERSION]]
       install.sh --uninstall [--dir DIR] [--keep-workspaces]

  --version X.Y.Z      release to install (default: the latest)      [PASEO_HOST_RUNTIME_VERSION]
  --dir DIR            where to install (default: ~/.local/bin,       [PASEO_HOST_RUNTIME_INSTALL]
                       or /usr/local/bin as root)
  --platform NAME      skip detection, one of: linux-x64,             [PASEO_HOST_RUNTIME_PLATFORM]
                       linux-x64-baseline, linux-x64-musl, linux-arm64, linux-arm64-musl,
                       darwin-x64, darwin-arm64
  --helper-from SRC    install $HELPER from a file or an http(s) URL: an executable
                       (a Paseo daemon's own, or packages/workspace-helper/src/executable.mjs
                       of a Paseo checkout), or the package's npm tarball (.tgz), beside $RUNTIME
  --helper-npm [VER]   install $HELPER from npm: the package $HELPER_PACKAGE
                       (VER: a version or tag, default latest) with npm, which checks its
                       integrity, into a private prefix; no install scripts run. Not
                       published by Paseo yet: until it is, use --helper-from
  --helper-sha256 HEX  the --helper-from file's SHA-256; without it a SHA256SUMS file beside SRC
                       must list it. An unverified helper is never installed.
  --modify-path        also add DIR to PATH in your shell's startup file
  --uninstall          remove what this script installed in DIR (and DIR, when it made it and
                       it is left empty); stops while a runtime home holds workspaces
  --keep-workspaces    with --uninstall: uninstall anyway, leaving those workspaces as they are
  -h, --help           this text
Releases come from \$PASEO_HOST_RUNTIME_BASE_URL, else the site DIR's last install came from,
else $BASE_URL_DEFAULT; a mirror (http(s):// or file://) is laid
out as <base>/download/vX.Y.Z/<file> and <base>/latest/download/<file>.
npm uses its own configuration (registry, mirror, proxy: ~/.npmrc, npm_config_*).
EOF
}

parse_args() {
  version="${PASEO_HOST_RUNTIME_VERSION:-}"
  dir="${PASEO_HOST_RUNTIME_INSTALL:-}"
  platform="${PASEO_HOST_RUNTIME_PLATFORM:-}"
  base_url="${PASEO_HOST_RUNTIME_BASE_URL:-}"
  helper_from=""
  helper_sha256=""
  helper_npm=""
  modify_path=no
  uninstall=no
  keep_workspaces=no
  while [ $# -gt 0 ]; do
    case "$1" in
      --*=*) opt="${1%%=*}"; val="${1#*=}"; shift; set -- "$opt" "$val" "$@" ;;
      --version|--dir|--platform|--helper-from|--helper-sha256)
        { [ $# -ge 2 ] && [ -n "$2" ]; } || usage_error "$1 needs a value"
        case "$1" in
          --version) version="$2" ;;
          --dir) dir="$2" ;;
          --platform) platform="$2" ;;
          --helper-from) helper_from="$2" ;;
          --helper-sha256) helper_sha256="$2" ;;
        esac
        shift 2 ;;
      --helper-npm)
        helper_npm=latest
        if [ $# -ge 2 ]; then
          case "$2" in
            "") usage_error "--helper-npm takes a version or tag, or nothing" ;;
            -*) ;;
            *) helper_npm="$2"; shift ;;
          esac
        fi
        shift ;;
      --modify-path) modify_path=yes; shift ;;
      --uninstall) uninstall=yes; shift ;;
      --keep-workspaces) keep_workspaces=yes; shift ;;
      -h|--help) usage; exit 0 ;;
      *) usage_error "unknown option: $1" ;;
    esac
  done
  version="${version#v}"
  case "$version" in
    *[!0-9A-Za-z.-]*) usage_error "not a version: $version" ;;
  esac
  helper_sha256=$(say "$helper_sha256" | tr 'A-F' 'a-f')
  case "$helper_sha256" in
    "") ;;
    *[!0-9a-f]*) usage_error "--helper-sha256 must be 64 hexadecimal digits" ;;
    *) [ ${#helper_sha256} -eq 64 ] || usage_error "--helper-sha256 must be 64 hexadecimal digits" ;;
  esac
  case "$helper_npm" in
    *[!0-9A-Za-z.+-]*) usage_error "--helper-npm: not an npm version or tag: $helper_npm" ;;
  esac
  if [ -n "$helper_sha256" ] && [ -z "$helper_from" ]; then usage_error "--helper-sha256 goes with --helper-from"; fi
  if [ -n "$helper_npm" ] && [ -n "$helper_from" ]; then usage_error "give either --helper-npm or --helper-from, not both"; fi
  if [ "$uninstall" = yes ] && { [ -n "$helper_from" ] || [ -n "$helper_npm" ] || [ "$modify_path" = yes ]; }; then
    usage_error "--uninstall takes only --dir and --keep-workspaces"
  fi
  if [ "$keep_workspaces" = yes ] && [ "$uninstall" != yes ]; then usage_error "--keep-workspaces goes with --uninstall"; fi
  base_url="${base_url%/}"
}

# The release site: PASEO_HOST_RUNTIME_BASE_URL, else the one the install in DIR came from (a
# mirror stays the source of its upgrades), else the public one. Sets base_from, said with it.
choose_base_url() {
  base_from="PASEO_HOST_RUNTIME_BASE_URL"
  if [ -n "$base_url" ]; then return; fi
  if [ -f "$dir/$MANIFEST" ]; then base_url=$(sed -n 's/^base //p' "$dir/$MANIFEST"); fi
  if [ -n "$base_url" ]; then
    base_from="recorded by the install in $dir; PASEO_HOST_RUNTIME_BASE_URL chooses another"
  else
    base_url="$BASE_URL_DEFAULT"
    base_from="the default; PASEO_HOST_RUNTIME_BASE_URL chooses a mirror"
  fi
}

# install_line: the command line that runs this installer again, from the same site, for this version and DIR.
install_line() {
  site_env=""
  if [ "$base_url" != "$BASE_URL_DEFAULT" ]; then site_env="PASEO_HOST_RUNTIME_BASE_URL=$(word "$base_url") "; fi
  printf 'curl -fsSL %s | %ssh -s -- --version %s --dir %s' "$(word "$base_url/download/v$version/install.sh")" "$site_env" "$version" "$(word "$dir")"
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

# Found once, before anything is downloaded: a way to hash, and a way to download.
find_hasher() {
  if command -v sha256sum >/dev/null 2>&1; then hasher="sha256sum"
  elif command -v shasum >/dev/null 2>&1; then hasher="shasum -a 256"
  else fail "neither sha256sum nor shasum is installed: cannot verify the download"
  fi
}

find_downloader() {
  if command -v curl >/dev/null 2>&1; then downloader=curl
  elif command -v wget >/dev/null 2>&1; then downloader=wget
  else fail "neither curl nor wget is installed"
  fi
}

# fetch URL FILE [bar]: downloads, with a progress bar when asked and stderr is a terminal.
# From an https URL, curl refuses redirects to anything but https.
fetch() {
  bar=no
  if [ "${3:-}" = bar ] && [ -t 2 ]; then bar=yes; fi
  if [ "$downloader" = curl ]; then
    show=-sS
    if [ "$bar" = yes ]; then show=--progress-bar; fi
    case "$1" in
      https://*) curl -fL "$show" --retry 2 --proto =https -o "$2" "$1" ;;
      *) curl -fL "$show" --retry 2 -o "$2" "$1" ;;
    esac
  elif [ "$bar" = yes ]; then
    wget -O "$2" "$1"
  else
    wget -q -O "$2" "$1"
  fi
}

download() { fetch "$@" || fail "download failed: $1"; }

# sha256 FILE: prints the file's SHA-256 in hex.
sha256() { $hasher "$1" | cut -d ' ' -f 1; }

release_url() {
  if [ -n "$version" ]; then
    say "$base_url/download/v$version"
  else
    say "$base_url/latest/download"
  fi
}

# sums_for SUMS NAME: the hashes a SHA256SUMS file lists for NAME (sha256sum's text or binary mode).
sums_for() {
  awk -v n="$2" '$2 == n || $2 == "*" n { print $1 }' "$1"
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
  expected=$(sums_for "$tmp/SHA256SUMS" "$archive")
  case "$expected" in
    "") fail "SHA256SUMS has no entry for $archive: refusing to install an unverified archive" ;;
    *"$NL"*) fail "SHA256SUMS lists $archive more than once" ;;
  esac
}

# SHA256SUMS first: a site without the release says so in a sentence, not in curl's words alone.
fetch_sums() {
  url=$(release_url)
  if ! fetch "$url/SHA256SUMS" "$tmp/SHA256SUMS" 2> "$tmp/fetch.err"; then
    why=$(tail -n 1 "$tmp/fetch.err")
    if [ -n "$version" ]; then what="no release $version at $base_url"; else what="no latest release at $base_url"; fi
    fail "$what (downloading $url/SHA256SUMS failed${why:+: $why}). Releases come from $base_url ($base_from)"
  fi
  pick_archive
}

# What DIR holds now, from its manifest: previous (the version installed, or empty) and
# current=yes when that is this version and platform with every recorded file unchanged.
read_installed() {
  previous=""
  current=no
  if [ -d "$dir" ]; then dir=$(cd "$dir" && pwd -P); fi
  [ -f "$dir/$MANIFEST" ] || return 0
  previous=$(sed -n 's/^version //p' "$dir/$MANIFEST")
  [ "$previous" = "$version" ] || return 0
  [ "$(sed -n 's/^platform //p' "$dir/$MANIFEST")" = "$platform" ] || return 0
  grep -q " $RUNTIME\$" "$dir/$MANIFEST" || return 0
  while read -r kind hash name; do
    if [ "$kind" = file ] && { [ ! -f "$dir/$name" ] || [ "$(sha256 "$dir/$name")" != "$hash" ]; }; then return 0; fi
    if [ "$kind" = npm ] && ! links_into "$hash" "$name"; then return 0; fi
  done < "$dir/$MANIFEST"
  current=yes
}

# links_into PREFIX NAME: DIR/NAME is the symlink to PREFIX's bin NAME, and that bin is there.
links_into() {
  [ -L "$dir/$2" ] && [ "$(readlink "$dir/$2")" = "$1/node_modules/.bin/$2" ] && [ -f "$dir/$2" ]
}

# Downloads and verifies the archive, then stages its executables in $tmp/stage.
fetch_archive() {
  say "Downloading $archive"
  download "$url/$archive" "$tmp/$archive" bar
  actual=$(sha256 "$tmp/$archive")
  [ "$actual" = "$expected" ] || fail "checksum mismatch for $archive (expected $expected, got $actual): nothing installed"
  mkdir "$tmp/x"
  tar -xzf "$tmp/$archive" -C "$tmp/x" || fail "cannot unpack $archive"
  unpacked="$tmp/x/$RUNTIME-$version-$platform"
  [ -f "$unpacked/$RUNTIME" ] || fail "$archive does not contain $RUNTIME"
  mv "$unpacked/$RUNTIME" "$tmp/stage/$RUNTIME"
  if [ -f "$unpacked/$HELPER" ] && [ -z "$helper_from" ] && [ -z "$helper_npm" ]; then mv "$unpacked/$HELPER" "$tmp/stage/$HELPER"; fi
}

# Sets want, the helper's expected SHA-256: --helper-sha256, else its line in a SHA256SUMS beside it.
helper_digest() {
  want="$helper_sha256"
  if [ -n "$want" ]; then return; fi
  name="${helper_from%%[?#]*}"
  name="${name##*/}"
  case "$helper_from" in
    http://*|https://*) sums="${helper_from%%[?#]*}"; sums="${sums%/*}/SHA256SUMS"
      fetch "$sums" "$tmp/helper.sums" 2>/dev/null || : > "$tmp/helper.sums" ;;
    *) sums="$(dirname "$helper_from")/SHA256SUMS"
      cp "$sums" "$tmp/helper.sums" 2>/dev/null || : > "$tmp/helper.sums" ;;
  esac
  want=$(sums_for "$tmp/helper.sums" "$name")
  case "$want" in
    "") fail "cannot verify $helper_from: no --helper-sha256 given and no $sums listing $name (pass --helper-sha256 HEX, the digest published with the helper): nothing installed" ;;
    *"$NL"*) fail "$sums lists $name more than once: nothing installed" ;;
  esac
}

# --helper-from: fetch, verify and stage the helper before anything is installed.
fetch_helper() {
  if [ -n "$helper_npm" ]; then stage_npm_helper "$HELPER_PACKAGE@$helper_npm"; return; fi
  [ -n "$helper_from" ] || return 0
  case "$helper_from" in
    http://*|https://*) say "Downloading $HELPER from $helper_from"; download "$helper_from" "$tmp/helper" bar ;;
    *) [ -f "$helper_from" ] || fail "--helper-from: no such file: $helper_from"; cp "$helper_from" "$tmp/helper" ;;
  esac
  helper_digest
  got=$(sha256 "$tmp/helper")
  [ "$got" = "$want" ] || fail "checksum mismatch for $helper_from (expected $want, got $got): nothing installed"
  # Installed under its bare name, it must be something execve runs: a #! script or a binary;
  # a gzip file is the package's npm tarball, installed with npm like --helper-npm.
  case "$(od -An -tx1 -N4 "$tmp/helper" | tr -d ' \n')" in
    1f8b*) say "  verified $helper_from (SHA-256 $got)"
      mv "$tmp/helper" "$tmp/helper.tgz"
      stage_npm_helper "$tmp/helper.tgz"
      return ;;
    2321*|7f454c46|cffaedfe|cefaedfe|cafebabe) ;;
    *) fail "$helper_from is neither a #! script, an executable nor an npm tarball (a JavaScript helper needs a '#!/usr/bin/env node' first line): nothing installed" ;;
  esac
  mv "$tmp/helper" "$tmp/stage/$HELPER"
  say "  verified $HELPER (SHA-256 $got)"
}

# stage_npm_helper SPEC: npm installs SPEC ($HELPER_PACKAGE@VERSION, or a verified tarball of
# it) into the private prefix $tmp/npm, which moves in beside the runtime later. npm checks every
# package it downloads against the registry's integrity hash. It runs no install script
# (--ignore-scripts): the runtime runs the helper's JavaScript on its own engine, so nothing
# needs building, and a script would run as whoever installs (root, for /usr/local/bin). Its
# cache is a throwaway one: a root install leaves no root-owned files in a user's ~/.npm.
stage_npm_helper() {
  command -v npm >/dev/null 2>&1 || fail "installing $HELPER_PACKAGE needs npm on PATH (it comes with Node.js; the package asks for Node >= 20): nothing installed"
  say "Installing $1 with npm $(npm --version 2>/dev/null) (registry $(npm config get registry 2>/dev/null)) into a private prefix"
  mkdir "$tmp/npm"
  say '{ "name": "paseo-workspace-helper-prefix", "private": true }' > "$tmp/npm/package.json"
  if ! npm install --prefix "$tmp/npm" --cache "$tmp/npm-cache" --ignore-scripts --no-audit --no-fund --no-update-notifier --save-exact --loglevel=error --logs-max=0 "$1" 2> "$tmp/npm.err"; then
    cat "$tmp/npm.err" >&2
    if grep -q 'E404' "$tmp/npm.err"; then
      fail "$HELPER_PACKAGE is not on the npm registry ($(npm config get registry 2>/dev/null)): Paseo has not published it yet, nothing installed. Install the helper with --helper-from instead: the helper of a Paseo daemon installed on this machine (its doctor names it), or packages/workspace-helper/src/executable.mjs from a checkout of https://github.com/getpaseo/paseo, with --helper-sha256 HEX (docs/helper-install.md)"
    fi
    fail "npm could not install $1 (its message is above): nothing installed"
  fi
  package="$tmp/npm/node_modules/$HELPER_PACKAGE"
  [ -f "$package/package.json" ] || fail "${helper_from:-$1} is not the package $HELPER_PACKAGE: nothing installed"
  { [ -L "$tmp/npm/node_modules/.bin/$HELPER" ] && [ -f "$tmp/npm/node_modules/.bin/$HELPER" ]; } ||
    fail "$HELPER_PACKAGE has no $HELPER bin: nothing installed"
  # The version npm resolved, from the lockfile it wrote (its own, fixed layout).
  npm_version=$(awk -v key="\"node_modules/$HELPER_PACKAGE\": {" 'index($0, key) { found = 1; next }
    found && /"version":/ { sub(/^[^:]*: *"/, ""); sub(/".*/, ""); print; exit }' "$tmp/npm/package-lock.json")
  # Readable by the daemon's user whoever installs, writable only by the installer.
  chmod -R u+rwX,go+rX,go-w "$tmp/npm"
  say "  npm installed $HELPER_PACKAGE $npm_version and its dependencies, each checked against its integrity hash"
}

# install_file NAME: DIR/NAME becomes the staged NAME, atomically; unchanged files are left alone.
install_file() {
  [ ! -d "$dir/$1" ] || fail "$dir/$1 is a directory"
  if cmp -s "$tmp/stage/$1" "$dir/$1"; then
    say "  $dir/$1 is already this version"
    return
  fi
  partial="$dir/.$1.partial.$$"
  cp "$tmp/stage/$1" "$partial"
  chmod 755 "$partial"
  mv -f "$partial" "$dir/$1"
  partial=""
  say "  installed $dir/$1"
}

# The manifest --uninstall reads: "version V", "platform P", "file SHA256 NAME" lines, "npm
# PREFIX NAME" for a helper installed with npm (DIR/NAME links into DIR/PREFIX), "rc PATH" when
# a startup file got the PATH line, and "base URL", the release site (doctor names it in its
# fixes). It lists what is staged and what earlier runs installed that is still there. Written
# before the files move in, so an install cut short still lets --uninstall find them (it
# removes only files whose hash matches), and again after.
write_manifest() {
  {
    say "version $version"
    say "platform $platform"
    if [ -f "$dir/$MANIFEST" ]; then
      while read -r kind hash name; do
        if [ "$kind" = file ] && [ ! -e "$tmp/stage/$name" ] && [ -f "$dir/$name" ] && [ "$(sha256 "$dir/$name")" = "$hash" ]; then
          say "file $hash $name"
        fi
        if [ "$kind" = npm ] && [ "$hash" != "$npm_prefix" ] && [ -d "$dir/$hash" ]; then say "npm $hash $name"; fi
      done < "$dir/$MANIFEST"
    fi
    for name in $RUNTIME $HELPER; do
      if [ -f "$tmp/stage/$name" ]; then say "file $(sha256 "$tmp/stage/$name") $name"; fi
    done
    if [ -n "$npm_prefix" ]; then say "npm $npm_prefix $HELPER"; fi
    if [ -n "$rc_file" ]; then say "rc $rc_file"; fi
    if [ "$made_dir" = yes ] || { [ -f "$dir/$MANIFEST" ] && grep -qx 'made dir' "$dir/$MANIFEST"; }; then say "made dir"; fi
    say "base $base_url"
  } > "$dir/$MANIFEST.partial.$$"
  mv -f "$dir/$MANIFEST.partial.$$" "$dir/$MANIFEST"
}

prepare_dir() {
  if [ ! -e "$dir" ]; then made_dir=yes; fi
  mkdir -p "$dir" || fail "cannot create $dir"
  dir=$(cd "$dir" && pwd -P)
  if [ "$current" != yes ]; then say "Installing $RUNTIME $version ($platform) into $dir"; fi
}

install_files() {
  for name in $RUNTIME $HELPER; do
    if [ -f "$tmp/stage/$name" ]; then install_file "$name"; fi
  done
  link_npm_helper
  prune_npm_prefixes
  write_manifest
}

# The prefix an npm-installed helper goes to: the one DIR/$HELPER links to now when npm
# installed exactly the same packages (same lockfile), else a new DIR/$NPM_PREFIX.N.
choose_npm_prefix() {
  npm_prefix=""
  [ -d "$tmp/npm" ] || return 0
  if [ -L "$dir/$HELPER" ]; then
    linked=$(readlink "$dir/$HELPER")
    linked="${linked%%/*}"
    case "$linked" in
      "$NPM_PREFIX".*) if links_into "$linked" "$HELPER" && cmp -s "$tmp/npm/package-lock.json" "$dir/$linked/package-lock.json"; then
          npm_prefix="$linked"
          rm -rf "$tmp/npm"
          say "  $dir/$HELPER is already $HELPER_PACKAGE $npm_version (the same packages)"
          return
        fi ;;
    esac
  fi
  n=$$
  while [ -e "$dir/$NPM_PREFIX.$n" ]; do n=$((n + 1)); done
  npm_prefix="$NPM_PREFIX.$n"
}

# The staged npm prefix moves in beside the runtime, then DIR/$HELPER becomes a relative
# symlink to its bin (the shape npm makes: bin → the package's file), replaced through a rename.
link_npm_helper() {
  [ -d "$tmp/npm" ] || return 0
  [ ! -d "$dir/$HELPER" ] || fail "$dir/$HELPER is a directory"
  partial_dir="$dir/$npm_prefix"
  mv "$tmp/npm" "$dir/$npm_prefix"
  partial_dir=""
  partial="$dir/.$HELPER.partial.$$"
  ln -s "$npm_prefix/node_modules/.bin/$HELPER" "$partial"
  mv -f "$partial" "$dir/$HELPER"
  partial=""
  say "  installed $dir/$HELPER -> $npm_prefix/node_modules/.bin/$HELPER ($HELPER_PACKAGE $npm_version)"
}

# Removes the npm prefixes of the manifest that DIR/$HELPER no longer links into.
prune_npm_prefixes() {
  [ -f "$dir/$MANIFEST" ] || return 0
  while read -r kind hash name; do
    if [ "$kind" = npm ] && ! links_into "$hash" "$name"; then remove_npm_prefix "$hash"; fi
  done < "$dir/$MANIFEST"
}

# remove_npm_prefix PREFIX: only ever a directory of ours, by its name, directly in DIR.
remove_npm_prefix() {
  case "$1" in
    "$NPM_PREFIX".*/*|"$NPM_PREFIX".) return ;;
    "$NPM_PREFIX".*) ;;
    *) return ;;
  esac
  if [ -d "$dir/$1" ]; then
    rm -rf "${dir:?}/$1"
    say "  removed $dir/$1 (an npm prefix of $HELPER)"
  fi
}

# The way out when DIR has no helper (a release built with --no-helper).
helper_note() {
  if [ -f "$dir/$HELPER" ]; then return; fi
  again=$(install_line)
  say ""
  say "Note: there is no $HELPER in $dir (this release ships without it)."
  say "The Paseo daemon runs the helper's describe after every create, then its file, watch and"
  say "resolve-command calls. Paseo has not published $HELPER_PACKAGE on npm yet. Install the helper"
  say "of a Paseo daemon on this machine (doctor above names it when it finds one), or the helper's one"
  say "file from a checkout of https://github.com/getpaseo/paseo (packages/workspace-helper/src/executable.mjs):"
  say "  $again --helper-from HELPER_FILE --helper-sha256 HEX"
  say "or set \"helperPath\" (an absolute path) in the runtime's options in Paseo's config.json."
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

path_line() { say "export PATH=\"$dir:\$PATH\" $PATH_MARKER"; }

# Only with --modify-path: one marked line in one startup file, added once.
add_path_line() {
  if [ "$modify_path" != yes ]; then return; fi
  line=$(path_line)
  if [ -f "$rc_file" ] && grep -qxF "$line" "$rc_file"; then
    say "  $rc_file already adds $dir to PATH"
  else
    say "$line" >> "$rc_file"
    say "  added $dir to PATH in $rc_file (open a new shell to use it)"
  fi
}

# version_lt A B: true when A comes before B (X.Y.Z by number; a pre-release before its release).
version_lt() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    split(a, x, "-"); split(b, y, "-"); split(x[1], p, "."); split(y[1], q, ".")
    for (i = 1; i <= 3; i++) if (p[i] + 0 != q[i] + 0) exit !(p[i] + 0 < q[i] + 0)
    s = substr(a, length(x[1]) + 2); t = substr(b, length(y[1]) + 2)
    exit !(s != t && s != "" && (t == "" || s < t))
  }'
}

summary() {
  if [ "$current" = yes ]; then
    return
  elif [ -z "$previous" ]; then
    say "Installed $RUNTIME $version in $dir"
  elif [ "$previous" = "$version" ]; then
    say "Reinstalled $RUNTIME $version in $dir"
  elif version_lt "$previous" "$version"; then
    say "Upgraded $RUNTIME $previous → $version in $dir"
  else
    say "Downgraded $RUNTIME $previous → $version in $dir"
  fi
}

# The installed binary must run here and say the version; doctor's problems are shown, not fatal.
check_installed() {
  line=$("$dir/$RUNTIME" --version 2>&1) || fail "$dir/$RUNTIME is installed but does not run on this machine: $line (remove it with: sh install.sh --uninstall --dir $dir)"
  case "$line" in
    "$RUNTIME $version "*) say "  $line" ;;
    *) fail "$dir/$RUNTIME --version printed \"$line\", expected $RUNTIME $version" ;;
  esac
  say ""
  say "Checking this host ($dir/$RUNTIME doctor --quiet, as $(id -un 2>/dev/null || id -u)):"
  # With the release site in use, so its fixes name this mirror, not the default.
  if report=$(PASEO_HOST_RUNTIME_BASE_URL="$base_url" "$dir/$RUNTIME" doctor --quiet 2>&1); then status=0; else status=$?; fi
  if [ -n "$report" ]; then say "$report"; fi
  if [ "$status" -ne 0 ]; then
    say "  a required check failed (above): fix it before pointing Paseo at this runtime"
  elif [ -n "$report" ]; then
    say "  no required check failed (warnings above)"
  else
    say "  no problems found"
  fi
  say "  (run it as the daemon's user with its options: $dir/$RUNTIME doctor --home DIR --owner NAME)"
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
}

# The runtime home a default configuration uses (src/store/home.ts decides the same way).
default_home() {
  if [ -n "${PASEO_HOST_RUNTIME_HOME:-}" ]; then say "$PASEO_HOST_RUNTIME_HOME"
  elif [ -n "${XDG_STATE_HOME:-}" ]; then say "$XDG_STATE_HOME/$RUNTIME"
  elif [ "$(uname -s)" = Darwin ]; then say "${HOME:-}/Library/Application Support/$RUNTIME"
  else say "${HOME:-}/.local/state/$RUNTIME"
  fi
}

quote() { printf "'%s'" "$(say "$1" | sed "s/'/'\\\\''/g")"; }

# word TEXT: TEXT as one shell word, quoted only when it needs it.
word() {
  case "$1" in
    *[!A-Za-z0-9_./:=@%+-]*|"") quote "$1" ;;
    *) printf '%s' "$1" ;;
  esac
}

# Removes the files listed in DIR's manifest whose content is still what was installed, and DIR
# when this script made it and it is left empty. Not while a runtime home holds workspaces: the
# runtime is what removes them (a worktree registered in the user's repository, a sandbox's
# files), unless --keep-workspaces.
uninstall() {
  if [ -d "$dir" ]; then dir=$(cd "$dir" && pwd -P); fi
  if [ ! -f "$dir/$MANIFEST" ]; then
    say "Nothing to uninstall: $dir has no $MANIFEST"
    return
  fi
  read_homes
  if [ "$homes_failed" = yes ] && [ "$keep_workspaces" != yes ]; then
    say "$homes_report" >&2
    fail "not uninstalled: $dir/$RUNTIME homes could not tell every runtime home (above), so whether one still holds workspaces is not known, and $dir/$RUNTIME is what removes them. Fix what it says, then run --uninstall again; or add --keep-workspaces to uninstall anyway"
  fi
  if [ "$workspaces" -gt 0 ] && [ "$keep_workspaces" != yes ]; then
    say "$homes_report" >&2
    fail "not uninstalled: the runtime homes above still hold $workspaces workspace(s), and $dir/$RUNTIME is what removes them (a worktree stays registered in its repository until then). Remove each with the line shown, then run --uninstall again; or add --keep-workspaces to uninstall anyway"
  fi
  while read -r kind hash name; do
    case "$kind" in
      file) remove_file "$hash" "$name" ;;
      npm) remove_npm_helper "$hash" "$name" ;;
    esac
  done < "$dir/$MANIFEST"
  rc_file=$(sed -n 's/^rc //p' "$dir/$MANIFEST")
  if [ -n "$rc_file" ]; then remove_path_line "$rc_file"; fi
  made=no
  if grep -qx 'made dir' "$dir/$MANIFEST"; then made=yes; fi
  rm -f "$dir/$MANIFEST"
  if [ "$made" = yes ]; then
    if rmdir "$dir" 2>/dev/null; then say "  removed $dir (this installer made it)"; else say "  kept $dir: it holds other files"; fi
  fi
  say "Uninstalled $RUNTIME from $dir"
  say ""
  if [ -n "$homes_report" ]; then
    say "The runtime homes are left alone:"
    say "$homes_report"
    say "To delete one and everything in it: rm -rf HOME (after removing its workspaces, as above)."
    return
  fi
  home=$(default_home)
  say "The runtime home (workspaces, state.sqlite) is left alone. With the default options it is"
  say "  $home$( [ -d "$home" ] || printf ' (does not exist)')"
  say "(a daemon's config.json may set another with options.stateDirectory). To delete one and every"
  say "workspace in it: rm -rf $(quote "$home"), then git worktree prune in repositories it held worktrees of."
}

# homes_report: what DIR's runtime says of the homes it works in (its `homes`, run once), and
# workspaces: how many they hold, its indented lines (a home line starts with its absolute path,
# a note with a word). Empty and 0 when it cannot say: a runtime too old to know `homes` (a usage
# error, exit 2), or one that does not run here (126: it cannot remove them either). Any other
# failure (a config it refuses, a home setting it refuses) sets homes_failed: not knowing is not
# "none".
read_homes() {
  homes_report=""
  workspaces=0
  homes_failed=no
  [ -x "$dir/$RUNTIME" ] || return 0
  status=0
  homes_report=$("$dir/$RUNTIME" homes 2>&1) || status=$?
  case "$status" in
    0) ;;
    2|126) homes_report=""; return 0 ;;
    *) homes_failed=yes ;;
  esac
  workspaces=$(say "$homes_report" | grep -c '^[[:space:]]' || true)
  homes_report=$(say "$homes_report" | sed 's/^/  /')
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

# remove_npm_helper PREFIX NAME: the link DIR/NAME when it still points into PREFIX, and PREFIX.
remove_npm_helper() {
  if [ -L "$dir/$2" ] && [ "$(readlink "$dir/$2")" = "$1/node_modules/.bin/$2" ]; then
    rm -f "$dir/$2"
    say "  removed $dir/$2"
  elif [ -e "$dir/$2" ]; then
    say "  kept $dir/$2: it no longer links into $dir/$1"
  fi
  remove_npm_prefix "$1"
}

# remove_path_line FILE: removes this directory's PATH line, and no other line.
remove_path_line() {
  line=$(path_line)
  if [ ! -f "$1" ] || ! grep -qxF "$line" "$1"; then return; fi
  grep -vxF "$line" "$1" > "$1.paseo-tmp.$$" || true
  cat "$1.paseo-tmp.$$" > "$1"
  rm -f "$1.paseo-tmp.$$"
  say "  removed the PATH line for $dir from $1"
}

cleanup() {
  if [ -n "${partial:-}" ]; then rm -f "$partial"; fi
  if [ -n "${partial_dir:-}" ]; then rm -rf "$partial_dir"; fi
  if [ -n "${tmp:-}" ]; then rm -rf "$tmp"; fi
}

main() {
  parse_args "$@"
  default_dir
  find_hasher
  if [ "$uninstall" = yes ]; then
    uninstall
    return
  fi
  detect_platform
  check_platform
  find_downloader
  choose_base_url
  say "paseo-host-runtime installer: platform $platform, directory $dir"
  say "  releases from $base_url ($base_from)"
  partial=""
  partial_dir=""
  made_dir=no
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/paseo-host-runtime.XXXXXX")
  trap cleanup EXIT
  trap 'exit 1' HUP INT PIPE TERM
  mkdir "$tmp/stage"
  fetch_sums
  read_installed
  if [ "$current" = yes ]; then say "$RUNTIME $version is already installed in $dir: nothing to download"; fi
  fetch_helper
  if [ "$current" != yes ]; then fetch_archive; fi
  prepare_dir
  choose_npm_prefix
  choose_rc_file
  write_manifest
  install_files
  add_path_line
  summary
  check_installed
  helper_note
  print_next_steps
}

# Everything runs from here, so a truncated download (curl | sh) executes nothing.
main "$@"
