#!/usr/bin/env bash
# Makes the Pulumi toolchain available without internet access, at the versions in
# versions.env: the CLI, the official Python language host, and the docker and command
# provider plugins installed into the project's PULUMI_HOME (.pulumi-home).
#
# - A Pulumi installation on PATH (the CLI with its Python language host beside it) is used
#   as is. Otherwise the CLI is built from the Go module proxy, and the language host from
#   the source mirror.
# - A plugin already installed in the project, or in the user's own ~/.pulumi, is used as is;
#   then one built earlier; then the normal download; last, a build from the source mirror.
# - The source mirror is the folder $DSLAB_SOURCE_MIRROR (docs/toolchain.md, "Air-gapped install"); it is
#   only read: every build works on a copy.
# - Builds are cached outside the clone in ${DSLAB_CACHE:-~/.cache/dslab}/toolchain, keyed by
#   the pins, the mirror's content and the build recipe: a second run takes seconds. The clone
#   holds its own hard links (or copies) of what it uses, in .pulumi-home/bin and plugins/, so
#   no change to the cache (another clone's pins, a pruned build) ever breaks a clone.
set -euo pipefail
# A step that fails inside $(...) fails the install (a missing source mirror, a failed copy).
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
# shellcheck source=toolchain/versions.env disable=SC1091
source "$here/versions.env"

pulumi_home="$repo/.pulumi-home"
cache_root="${DSLAB_CACHE:-$HOME/.cache/dslab}/toolchain"
mirror="${DSLAB_SOURCE_MIRROR:-}"
mkdir -p "$pulumi_home" "$repo/.pulumi-state" "$cache_root"
chmod 700 "$pulumi_home"
export PULUMI_HOME="$pulumi_home" PULUMI_SKIP_UPDATE_CHECK=true
# Go may not fetch a newer Go by itself: the version on PATH builds everything.
export GOTOOLCHAIN=local
# The compiler collects garbage less often: the same builds took ~20% less time and CPU on 2
# cores (bench/go-gc.sh), for ~100 MB more peak memory. Only the build's speed changes.
export GOGC="${GOGC:-400}"

log() { printf '[toolchain] %s\n' "$*" >&2; }
fail() { log "$*"; exit 1; }

# Runs "$@" with its output in a log file, saying every 30 s that it is still at it; on
# failure shows the end of that log.
with_progress() {
  local label=$1 output started=$SECONDS
  shift
  output=$(mktemp)
  "$@" >"$output" 2>&1 &
  local pid=$! said=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if ((SECONDS - said >= 30)); then
      said=$SECONDS
      log "$label: $((SECONDS - started)) s so far"
    fi
  done
  if ! wait "$pid"; then
    tail -n 40 "$output" >&2
    rm -f "$output"
    fail "$label failed after $((SECONDS - started)) s (its last output is above)"
  fi
  rm -f "$output"
}

go_module_dir() {
  go mod download -json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'
}

# A folder of the mirror, checked: the error names the variable and what is missing.
mirror_folder() {
  [[ -n "$mirror" ]] || fail "no source mirror: set DSLAB_SOURCE_MIRROR to the folder holding pulumi-command/, pulumi-docker/ and pulumi-language-python/ (docs/toolchain.md, \"Air-gapped install\")"
  [[ -d "$mirror/$1" ]] || fail "the source mirror $mirror has no $1/ (docs/toolchain.md, \"Air-gapped install\")"
  echo "$mirror/$1"
}

# A writable copy of a mirror folder in a new temporary folder.
working_copy() {
  local work
  work=$(mktemp -d)
  cp -R "$(mirror_folder "$1")" "$work/"
  chmod -R u+w "$work"
  echo "$work/$1"
}

build_cli() {
  local out=$1 work pkg_dir
  work=$(mktemp -d)
  pkg_dir=$(go_module_dir "github.com/pulumi/pulumi/pkg/v3@v$PULUMI_VERSION")
  (
    cd "$work"
    go mod init dslab.local/toolchain/pulumi-cli
    go mod edit -require="github.com/pulumi/pulumi/pkg/v3@v$PULUMI_VERSION" \
                -require="github.com/pulumi/pulumi/sdk/v3@v$PULUMI_VERSION"
    # `go install pkg@version` refuses modules with replace directives, so repeat pkg's
    # replaces that point at other modules (its local ../sdk one is our require above).
    go mod edit -json "$pkg_dir/go.mod" | python3 "$here/replaces.py" | while read -r replace; do
      go mod edit -replace="$replace"
    done
    printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"\n' > tools.go
    cp "$pkg_dir/go.sum" go.sum
    go mod tidy
    go build -trimpath -o "$out/pulumi" \
      -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" \
      github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  )
  rm -rf "$work"
  # The Python SDK's two scripts: the program runner and the dynamic-provider plugin.
  local sdk_dir
  sdk_dir=$(go_module_dir "github.com/pulumi/pulumi/sdk/v3@v$PULUMI_PYTHON_SDK_VERSION")
  install -m 0755 "$sdk_dir/python/cmd/pulumi-language-python-exec" "$out/"
  install -m 0755 "$sdk_dir/python/dist/pulumi-resource-pulumi-python" "$out/"
}

build_language_python() {
  local out=$1 src
  src=$(working_copy pulumi-language-python)
  (
    cd "$src/sdk/python/cmd/pulumi-language-python"
    # Its go.mod points pulumi's own modules into the pulumi repository; take the released ones.
    go mod edit -dropreplace github.com/pulumi/pulumi/pkg/v3 -dropreplace github.com/pulumi/pulumi/sdk/v3
    GOFLAGS=-mod=mod go get "github.com/pulumi/pulumi/pkg/v3@v$PULUMI_LANGUAGE_PYTHON_VERSION" \
      "github.com/pulumi/pulumi/sdk/v3@v$PULUMI_LANGUAGE_PYTHON_VERSION"
    go build -trimpath -o "$out/pulumi-language-python" \
      -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_LANGUAGE_PYTHON_VERSION" .
  )
  rm -rf "$(dirname "$src")"
}

build_resource_command() {
  local out=$1 src
  src=$(working_copy pulumi-command)
  (
    cd "$src/provider"
    go build -trimpath -o "$out/pulumi-resource-command" \
      -ldflags "-X github.com/pulumi/pulumi-command/provider/pkg/version.Version=$PULUMI_COMMAND_VERSION" \
      ./cmd/pulumi-resource-command
  )
  rm -rf "$(dirname "$src")"
}

build_resource_docker() {
  local out=$1 src patch
  src=$(working_copy pulumi-docker)
  (
    cd "$src/upstream"
    for patch in ../patches/*.patch; do patch -p1 --quiet < "$patch"; done
    cd "$src/provider"
    export CGO_ENABLED=0
    (cd cmd/pulumi-resource-docker && VERSION=$PULUMI_DOCKER_VERSION go generate ./main.go)
    go build -trimpath -o "$out/pulumi-resource-docker" \
      -ldflags "-X github.com/pulumi/pulumi-docker/provider/v4/pkg/version.Version=$PULUMI_DOCKER_VERSION -s -w" \
      ./cmd/pulumi-resource-docker
  )
  rm -rf "$(dirname "$src")"
}

# What a build of NAME depends on besides its version: its recipe, Go, and where it comes
# from the mirror, that folder's content (names, modes and bytes, not timestamps).
build_inputs_hash() {
  local name=$1 mirror_part=${2:-}
  {
    declare -f "build_${name//-/_}"
    go version
    cat "$here/replaces.py"
    if [[ -n "$mirror_part" ]]; then
      tar -C "$(mirror_folder "$mirror_part")" -c --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner .
    fi
  } | sha256sum | cut -c1-12
}

# How many builds of each binary the cache keeps (the most recently used): clones on a few
# different pins or branches take turns without rebuilding (minutes each), and the cache stays
# at a few hundred MB per binary. No clone needs them to run: it holds its own links.
builds_kept=3

# Removes all but the $builds_kept most recently used builds of NAME (a folder's mtime is
# its last use: cached_build touches it).
prune_builds() {
  local name=$1 old
  find "$cache_root" -mindepth 1 -maxdepth 1 -type d -name "$name-*" -printf '%T@ %p\n' \
    | sort -rn | tail -n +$((builds_kept + 1)) | cut -d' ' -f2- \
    | while IFS= read -r old; do rm -rf "$old"; done
}

# Prints the cache folder holding NAME at VERSION, building it first when there is none.
# MIRROR_PART is the mirror folder it is built from (none: the Go module proxy). Without a
# mirror, an earlier build of the same version is reused. Runs under the cache's lock (main).
cached_build() {
  local name=$1 version=$2 mirror_part=${3:-} dir
  if [[ -n "$mirror_part" && -z "$mirror" ]]; then
    dir=$(find "$cache_root" -mindepth 2 -maxdepth 2 -name .complete -path "*/$name-$version-*" -printf '%h\n' | head -n 1)
    [[ -n "$dir" ]] && { touch "$dir"; echo "$dir"; return; }
    mirror_folder "$mirror_part" >/dev/null  # fails: nothing to build from
  fi
  command -v go >/dev/null || fail "Go is needed to build $name $version (none on PATH; docs/toolchain.md, \"What the operator's machine needs\")"
  dir="$cache_root/$name-$version-$(build_inputs_hash "$name" "$mirror_part")"
  if [[ ! -f "$dir/.complete" ]]; then
    # A staging folder of this run's own: a build killed half way leaves one that no later run
    # mistakes for a build (only a complete folder is ever moved to its final name).
    local staging started=$SECONDS
    staging=$(mktemp -d "$cache_root/.partial-$name-XXXXXX")
    log "building $name $version${mirror_part:+ from $mirror/$mirror_part} (first time only)"
    with_progress "building $name $version" "build_${name//-/_}" "$staging"
    [[ -n "$(ls -A "$staging")" ]] || fail "building $name $version produced nothing"
    touch "$staging/.complete"
    rm -rf "$dir"
    mv "$staging" "$dir"
    log "built $name $version in $((SECONDS - started)) s"
  fi
  touch "$dir"
  prune_builds "$name"
  echo "$dir"
}

ambient_toolchain_dir() {
  # A user who installed Pulumi the usual way has these programs in one place.
  local cli dir
  cli=$(command -v pulumi 2>/dev/null) || return 1
  [[ "$cli" == "$pulumi_home"/* ]] && return 1
  dir=$(dirname "$(readlink -f "$cli")")
  [[ -x "$dir/pulumi-language-python" && -x "$dir/pulumi-resource-pulumi-python" ]] || return 1
  echo "$dir"
}

# Puts FILE... into the clone's own folder .pulumi-home/bin, each under its name, and removes
# whatever else is there. The CLI finds its language host beside its own executable, so they
# share this folder. Each is a hard link (a copy where the filesystem refuses one), never a
# symlink: deleting any cache folder leaves the clone's files as they are. A file that is
# already the same (the same inode, or the same bytes) is kept, so a run with nothing changed
# changes nothing. Files are replaced by rename, so `pulumi` is never missing nor half written
# (a non-empty folder cannot be renamed over another); a new folder, or the symlink into the
# cache that older installs made, is filled beside and then renamed into place.
install_bin() {
  local bin="$pulumi_home/bin" target file name present
  local -A wanted=()
  find "$pulumi_home" -mindepth 1 -maxdepth 1 -name '.bin-*' -exec rm -rf {} +  # a killed run's
  if [[ -d "$bin" && ! -L "$bin" ]]; then
    target=$bin
  else
    target=$(mktemp -d "$pulumi_home/.bin-XXXXXX")
    chmod 755 "$target"
  fi
  for file in "$@"; do
    name=$(basename "$file")
    wanted[$name]=1
    if [[ -f "$target/$name" && ! -L "$target/$name" ]] \
       && { [[ "$target/$name" -ef "$file" ]] || cmp -s "$target/$name" "$file"; }; then
      continue
    fi
    # -L: a link to the file itself where FILE is a symlink (an installation's own links).
    ln -fL "$file" "$target/.$name.$$" 2>/dev/null || cp -p "$file" "$target/.$name.$$"
    mv -f "$target/.$name.$$" "$target/$name"
  done
  while IFS= read -r present; do
    [[ -n "${wanted[$present]:-}" ]] || rm -rf "${target:?}/$present"
  done < <(find "$target" -mindepth 1 -maxdepth 1 -printf '%f\n')
  if [[ "$target" != "$bin" ]]; then
    rm -f "$bin"
    mv -T "$target" "$bin"
  fi
}

ensure_passphrase() {
  # The local secrets provider's passphrase: random, generated once, readable by us only.
  local file="$pulumi_home/passphrase"
  if [[ ! -s "$file" ]]; then
    (umask 077; head -c 32 /dev/urandom | base64 > "$file")
  fi
}

# Installs the resource plugin NAME at VERSION into the project's PULUMI_HOME. `pulumi plugin
# install --file` copies the binary there: the clone keeps it when the cache prunes the build.
ensure_plugin() {
  local name=$1 version=$2 binary="pulumi-resource-$1"
  local installed="$pulumi_home/plugins/resource-$name-v$version/$binary"
  [[ -x "$installed" ]] && return
  local user_plugin="$HOME/.pulumi/plugins/resource-$name-v$version/$binary"
  local built
  built=$(find "$cache_root" -mindepth 2 -maxdepth 2 -name .complete -path "*/resource-$name-$version-*" -printf '%h\n' | head -n 1)
  if [[ -x "$user_plugin" ]]; then
    log "$name $version: from $user_plugin"
    pulumi plugin install resource "$name" "$version" --file "$user_plugin" >/dev/null
  elif [[ -n "$built" ]]; then
    touch "$built"
    pulumi plugin install resource "$name" "$version" --file "$built/$binary" >/dev/null
  elif timeout 60 pulumi plugin install resource "$name" "$version" >/dev/null 2>&1; then
    log "$name $version: downloaded"
  else
    log "$name $version: no download (no internet?); building it from the source mirror"
    built=$(cached_build "resource-$name" "$version" "pulumi-$name")
    pulumi plugin install resource "$name" "$version" --file "$built/$binary" >/dev/null
  fi
  [[ -x "$installed" ]] || fail "pulumi plugin install did not put $binary $version into $pulumi_home/plugins"
}

# Removes what older versions of this script cached (a folder per whole toolchain), and the
# staging folders of builds that were killed (none is in use: the cache's lock is held). The
# bin-* folders that older installs made are kept: a clone not installed since links to one.
forget_old_layout() {
  find "$cache_root" -mindepth 1 -maxdepth 1 -type d -regextype egrep \
    ! -regex '.*/(cli|language-python|resource-docker|resource-command|bin)-.*' -exec rm -rf {} +
}

# Every change to the cache happens under one lock: two installs at once (two clones, or a
# clone and CI, on one machine) take turns, and the second finds the first's builds.
lock_cache() {
  exec {cache_lock}>"$cache_root/.lock"
  if ! flock --nonblock "$cache_lock"; then
    log "another install is using $cache_root; waiting for it"
    flock "$cache_lock"
  fi
}

main() {
  ensure_passphrase
  lock_cache
  forget_old_layout
  local dir
  if dir=$(ambient_toolchain_dir); then
    log "using the Pulumi installation in $dir ($("$dir/pulumi" version))"
    # The CLI and what a Python project needs of what lies beside it.
    install_bin "$dir/pulumi" "$dir"/pulumi-language-python* "$dir/pulumi-resource-pulumi-python"
  else
    local cli language
    cli=$(cached_build cli "$PULUMI_VERSION-sdk$PULUMI_PYTHON_SDK_VERSION")
    language=$(cached_build language-python "$PULUMI_LANGUAGE_PYTHON_VERSION" pulumi-language-python)
    install_bin "$cli"/* "$language"/*
  fi
  export PATH="$pulumi_home/bin:$PATH"
  ensure_plugin docker "$PULUMI_DOCKER_VERSION"
  ensure_plugin command "$PULUMI_COMMAND_VERSION"
  log "$(pulumi version), docker $PULUMI_DOCKER_VERSION, command $PULUMI_COMMAND_VERSION ready; run: source toolchain/env.sh"
}

# Sourced (the tests do, to drive one function), it only defines them.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
