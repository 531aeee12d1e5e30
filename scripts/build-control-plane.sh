#!/usr/bin/env bash
# Builds etcd and the Kubernetes binaries (control plane, kubectl, and the node's kubelet and
# kube-proxy) from Go modules, once per version, into a cache outside the checkout. A binary lands
# under a temporary name and is renamed into place only when it linked, so an interrupted build never
# leaves something that looks complete.
set -euo pipefail

here="$(dirname "$0")"
source "$here/../toolchain.env"
source "$here/build-lib.sh"
log_prefix=control-plane

kube_commands=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy)

build_etcd() {
  local dest="$CACHE/etcd/$ETCD_VERSION"
  [[ -x "$dest/etcd" ]] && return 0
  log "building etcd $ETCD_VERSION (first run only; cached in $dest)"
  local work; work=$(new_work_dir etcd-build)
  (
    cd "$work"
    go mod init kvpool.local/etcd-build >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1
    CGO_ENABLED=0 go build -trimpath -o "$work/out/etcd" go.etcd.io/etcd/server/v3
  )
  land "$work/out" "$dest"
}

build_kube() {
  local dest="$CACHE/kube/$KUBE_VERSION" missing=() cmd
  for cmd in "${kube_commands[@]}"; do [[ -x "$dest/$cmd" ]] || missing+=("$cmd"); done
  ((${#missing[@]})) || return 0
  log "building ${missing[*]} $KUBE_VERSION (first run only; tens of minutes on 2 cores; cached in $dest)"
  local staging="v0.${KUBE_VERSION#v1.}"
  local work; work=$(new_work_dir kube-build)
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
    {
      printf '//go:build tools\n\npackage tools\n\nimport (\n'
      for cmd in "${missing[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$cmd"; done
      printf ')\n'
    } > tools.go
    with_progress "resolving modules" go mod tidy
    for cmd in "${missing[@]}"; do
      with_progress "compiling $cmd" env CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$work/out/$cmd" "k8s.io/kubernetes/cmd/$cmd"
    done
  )
  mkdir -p "$dest"
  for cmd in "${missing[@]}"; do mv "$work/out/$cmd" "$dest/$cmd.partial" && mv "$dest/$cmd.partial" "$dest/$cmd"; done
}

require_go
build_etcd
build_kube
log "etcd $ETCD_VERSION and Kubernetes $KUBE_VERSION ready in $CACHE"
