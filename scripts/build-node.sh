#!/usr/bin/env bash
# Builds what a local cluster node runs, once per version, into the cache outside the checkout:
# containerd 2 (daemon, runc shim, ctr), runc, the CNI plugins, crictl, CoreDNS and the image registry
# the nodes pull from, from Go modules.
# kubelet and kube-proxy come with the control plane (build-control-plane.sh). Each component lands
# under a temporary name and is renamed into place only when every binary linked.
set -euo pipefail

here="$(dirname "$0")"
source "$here/../toolchain.env"
source "$here/build-lib.sh"
log_prefix=node

# build_module <dest> <module@version> <cgo> <tags> <package> <binary> [<package> <binary> ...]: the packages are
# resolved at the module's version, each compiled to its binary.
build_module() {
  local dest=$1 module=$2 cgo=$3 tags=$4; shift 4
  local work; work=$(new_work_dir node-build)
  (
    cd "$work"
    go mod init kvpool.local/node-build >/dev/null 2>&1
    local version=${module#*@} packages=() i
    for ((i = 1; i <= $#; i += 2)); do packages+=("${!i}@$version"); done
    with_progress "resolving ${module}" go get "${packages[@]}"
    while (($#)); do
      with_progress "compiling $2" env CGO_ENABLED="$cgo" go build -trimpath -tags "$tags" -ldflags '-s -w' -o "$work/out/$2" "$1"
      shift 2
    done
  )
  land "$work/out" "$dest"
}

build_containerd() {
  local dest="$CACHE/containerd/$CONTAINERD_VERSION"
  [[ -x "$dest/containerd" ]] && return 0
  log "building containerd $CONTAINERD_VERSION (first run only; cached in $dest)"
  local m=github.com/containerd/containerd/v2
  build_module "$dest" "$m@$CONTAINERD_VERSION" 0 "no_btrfs no_devmapper no_zfs" \
    "$m/cmd/containerd" containerd "$m/cmd/containerd-shim-runc-v2" containerd-shim-runc-v2 "$m/cmd/ctr" ctr
}

build_runc() {
  local dest="$CACHE/runc/$RUNC_VERSION"
  [[ -x "$dest/runc" ]] && return 0
  log "building runc $RUNC_VERSION with seccomp (first run only; cached in $dest)"
  build_module "$dest" "github.com/opencontainers/runc@$RUNC_VERSION" 1 "seccomp urfave_cli_no_docs" \
    github.com/opencontainers/runc runc
}

build_cni_plugins() {
  local dest="$CACHE/cni-plugins/$CNI_PLUGINS_VERSION"
  [[ -x "$dest/bridge" ]] && return 0
  log "building CNI plugins $CNI_PLUGINS_VERSION (first run only; cached in $dest)"
  local m=github.com/containernetworking/plugins
  build_module "$dest" "$m@$CNI_PLUGINS_VERSION" 0 "" \
    "$m/plugins/main/bridge" bridge "$m/plugins/main/loopback" loopback \
    "$m/plugins/ipam/host-local" host-local "$m/plugins/meta/portmap" portmap
}

build_crictl() {
  local dest="$CACHE/crictl/$CRICTL_VERSION"
  [[ -x "$dest/crictl" ]] && return 0
  log "building crictl $CRICTL_VERSION (first run only; cached in $dest)"
  build_module "$dest" "sigs.k8s.io/cri-tools@$CRICTL_VERSION" 0 "" sigs.k8s.io/cri-tools/cmd/crictl crictl
}

# CoreDNS with the plugins a cluster's DNS uses, as its documentation describes for a custom build.
build_coredns() {
  local dest="$CACHE/coredns/$COREDNS_VERSION"
  [[ -x "$dest/coredns" ]] && return 0
  log "building CoreDNS $COREDNS_VERSION (first run only; cached in $dest)"
  local work; work=$(new_work_dir coredns-build)
  (
    cd "$work"
    go mod init kvpool.local/coredns-build >/dev/null 2>&1
    cat > main.go <<'GO'
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/core/plugin"
	"github.com/coredns/coredns/coremain"
)

func main() {
	dnsserver.Directives = []string{"errors", "health", "ready", "kubernetes", "cache", "loop", "reload", "loadbalance", "forward"}
	coremain.Run()
}
GO
    with_progress "resolving CoreDNS" go get "github.com/coredns/coredns@$COREDNS_VERSION"
    with_progress "resolving CoreDNS" go mod tidy
    with_progress "compiling coredns" env CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/out/coredns" .
  )
  land "$work/out" "$dest"
}

# The local cluster's image registry: the CNCF Distribution registry, which nodes pull from.
build_registry() {
  local dest="$CACHE/registry/$REGISTRY_VERSION"
  [[ -x "$dest/registry" ]] && return 0
  log "building the Distribution registry $REGISTRY_VERSION (first run only; cached in $dest)"
  local m=github.com/distribution/distribution/v3
  build_module "$dest" "$m@$REGISTRY_VERSION" 0 "" "$m/cmd/registry" registry
}

# The pause program every Pod sandbox holds: the project's own (images/pause/pause.go).
build_pause() {
  local hash; hash=$(sha256sum "$here/../images/pause/pause.go" | cut -c1-16)
  local dest="$CACHE/pause/$hash"
  [[ -x "$dest/pause" ]] && return 0
  local work; work=$(new_work_dir pause-build)
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/out/pause" "$here/../images/pause/pause.go"
  land "$work/out" "$dest"
}

require_go

build_containerd
build_runc
build_cni_plugins
build_crictl
build_coredns
build_registry
build_pause
log "containerd $CONTAINERD_VERSION, runc $RUNC_VERSION, CNI plugins $CNI_PLUGINS_VERSION, crictl $CRICTL_VERSION, CoreDNS $COREDNS_VERSION, registry $REGISTRY_VERSION ready in $CACHE"
