#!/usr/bin/env bash
# Makes the Pulumi toolchain available without internet access: the CLI, the Python
# language host and the dynamic-provider plugin, at the versions in versions.env.
#
# - A normal Pulumi installation on PATH is used as is; nothing is built.
# - Otherwise everything is built from the Go module proxy into a cache outside the clone,
#   keyed by the pinned versions and our sources: the second run takes seconds.
# - Either way the project gets its own PULUMI_HOME (.pulumi-home), a file state backend
#   (.pulumi-state) and a generated passphrase for the secrets provider; see env.sh.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
# shellcheck source=toolchain/versions.env disable=SC1091
source "$here/versions.env"

pulumi_home="$repo/.pulumi-home"
mkdir -p "$pulumi_home" "$repo/.pulumi-state"
chmod 700 "$pulumi_home"

log() { printf '[toolchain] %s\n' "$*" >&2; }

ambient_toolchain_dir() {
  # A user who installed Pulumi the usual way has all three programs in one place.
  local cli
  cli=$(command -v pulumi 2>/dev/null) || return 1
  [[ "$cli" == "$pulumi_home"/* ]] && return 1
  local dir
  dir=$(dirname "$(readlink -f "$cli")")
  [[ -x "$dir/pulumi-language-python" && -x "$dir/pulumi-resource-pulumi-python" ]] || return 1
  echo "$dir"
}

cache_key() {
  # Everything that changes the binaries: pins, our language host, the Go version.
  { cat "$here/versions.env"; cat "$here/langhost/go.mod" "$here/langhost/go.sum" "$here/langhost/"*.go
    cat "$here/install.sh"; go version; } | sha256sum | cut -c1-16
}

build_cli() {
  local out=$1 work
  work=$(mktemp -d)
  log "building pulumi v$PULUMI_VERSION (first time only: a few minutes)"
  local pkg_dir
  pkg_dir=$(go mod download -json "github.com/pulumi/pulumi/pkg/v3@v$PULUMI_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  (
    cd "$work"
    go mod init dslab.local/toolchain/pulumi-cli >/dev/null 2>&1
    go mod edit -require="github.com/pulumi/pulumi/pkg/v3@v$PULUMI_VERSION" \
                -require="github.com/pulumi/pulumi/sdk/v3@v$PULUMI_VERSION"
    # `go install pkg@version` refuses modules with replace directives, so repeat pkg's
    # replaces that point at other modules (its local ../sdk one is our require above).
    go mod edit -json "$pkg_dir/go.mod" | python3 "$here/replaces.py" | while read -r replace; do
      go mod edit -replace="$replace"
    done
    printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"\n' > tools.go
    cp "$pkg_dir/go.sum" go.sum
    go mod tidy >/dev/null 2>&1 || go mod tidy
    go build -trimpath -o "$out/pulumi" \
      -ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" \
      github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  )
  rm -rf "$work"
}

build_language_host() {
  local out=$1
  log "building pulumi-language-python (our own host, toolchain/langhost)"
  (cd "$here/langhost" && go build -trimpath -o "$out/pulumi-language-python" \
    -ldflags "-X main.version=$PULUMI_VERSION" .)
  local sdk_dir
  sdk_dir=$(go mod download -json "github.com/pulumi/pulumi/sdk/v3@v$PULUMI_PYTHON_SDK_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  install -m 0755 "$sdk_dir/python/cmd/pulumi-language-python-exec" "$out/"
  install -m 0755 "$sdk_dir/python/dist/pulumi-resource-pulumi-python" "$out/"
}

link_toolchain() {
  ln -sfn "$1" "$pulumi_home/bin"
}

ensure_passphrase() {
  # The local secrets provider's passphrase: random, generated once, readable by us only.
  local file="$pulumi_home/passphrase"
  if [[ ! -s "$file" ]]; then
    (umask 077; head -c 32 /dev/urandom | base64 > "$file")
  fi
}

main() {
  ensure_passphrase
  local dir
  if dir=$(ambient_toolchain_dir); then
    log "using the Pulumi installation in $dir ($("$dir/pulumi" version)); nothing to build"
    link_toolchain "$dir"
    return
  fi
  command -v go >/dev/null || { log "Go is needed to build the toolchain (none on PATH)"; exit 1; }
  local cache key
  key=$(cache_key)
  cache="${DSLAB_CACHE:-$HOME/.cache/dslab}/toolchain/$key"
  if [[ -f "$cache/.complete" ]]; then
    log "reusing $cache"
  else
    local staging="$cache.partial"
    rm -rf "$staging"
    mkdir -p "$staging"
    local started=$SECONDS
    build_cli "$staging"
    build_language_host "$staging"
    touch "$staging/.complete"
    rm -rf "$cache"
    mv "$staging" "$cache"
    log "built in $((SECONDS - started)) s into $cache"
    # Builds for other pins are ~200 MB each and quick to redo from Go's own caches.
    find "$(dirname "$cache")" -mindepth 1 -maxdepth 1 -type d ! -path "$cache" -exec rm -rf {} +
  fi
  link_toolchain "$cache"
  log "$("$cache/pulumi" version) ready; run: source toolchain/env.sh"
}

main "$@"
