#!/usr/bin/env bash
# Builds etcd and the Kubernetes control-plane binaries from Go modules, once per version, into a
# cache outside the checkout. A build lands under a temporary name and is renamed into place only
# when every binary linked, so an interrupted build never leaves something that looks complete.
set -euo pipefail

source "$(dirname "$0")/../toolchain.env"
CACHE="${KVPOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvpool}"

log() { printf '[control-plane] %s\n' "$*" >&2; }

work_dirs=()
cleanup() { ((${#work_dirs[@]})) && rm -rf "${work_dirs[@]}"; return 0; }
trap cleanup EXIT

# Runs a long command, printing a heartbeat every 30 s so a slow step is visibly alive.
with_progress() {
  local label=$1; shift
  local started=$SECONDS
  "$@" &
  local pid=$!
  local ticks=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if (( ++ticks % 30 == 0 )) && kill -0 "$pid" 2>/dev/null; then
      log "$label: still working (${ticks} s)"
    fi
  done
  wait "$pid"
  log "$label: done in $((SECONDS - started)) s"
}

build_etcd() {
  local dest="$CACHE/etcd/$ETCD_VERSION"
  [[ -x "$dest/etcd" ]] && return 0
  log "building etcd $ETCD_VERSION (first run only; cached in $dest)"
  local work; work=$(mktemp -d "$CACHE/tmp/etcd-build.XXXXXX")
  work_dirs+=("$work")
  (
    cd "$work"
    go mod init kvpool.local/etcd-build >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1
    CGO_ENABLED=0 go build -trimpath -o "$work/out/etcd" go.etcd.io/etcd/server/v3
  )
  mkdir -p "$(dirname "$dest")"
  rm -rf "$dest.partial" && mv "$work/out" "$dest.partial" && mv "$dest.partial" "$dest"
}

build_kube() {
  local dest="$CACHE/kube/$KUBE_VERSION"
  [[ -x "$dest/kube-apiserver" && -x "$dest/kubectl" ]] && return 0
  log "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $KUBE_VERSION (first run only; tens of minutes on 2 cores; cached in $dest)"
  local staging="v0.${KUBE_VERSION#v1.}"
  local work; work=$(mktemp -d "$CACHE/tmp/kube-build.XXXXXX")
  work_dirs+=("$work")
  (
    cd "$work"
    go mod init kvpool.local/kube-build >/dev/null 2>&1
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    [[ -f "$gomod" ]] || { log "could not download k8s.io/kubernetes@$KUBE_VERSION"; exit 1; }
    {
      echo "require k8s.io/kubernetes $KUBE_VERSION"
      # Every staging module the release pins at v0.0.0 is published as v0.<minor>.<patch>.
      grep -oE '^\s*k8s\.io/[a-z0-9-]+ v0\.0\.0(\s|$)' "$gomod" | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
    } >> go.mod
    local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2)"
    cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
    with_progress "resolving modules" go mod tidy
    for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
      with_progress "compiling $cmd" env CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$work/out/$cmd" "k8s.io/kubernetes/cmd/$cmd"
    done
  )
  mkdir -p "$(dirname "$dest")"
  rm -rf "$dest.partial" && mv "$work/out" "$dest.partial" && mv "$dest.partial" "$dest"
}

command -v go >/dev/null || { log "Go is not installed: install a Go toolchain (1.24 or newer) and re-run"; exit 1; }
mkdir -p "$CACHE/tmp"
build_etcd
build_kube
log "etcd $ETCD_VERSION and Kubernetes $KUBE_VERSION ready in $CACHE"
