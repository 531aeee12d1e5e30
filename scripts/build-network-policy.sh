#!/usr/bin/env bash
# Builds the local cluster's NetworkPolicy enforcer, once per version, into the cache outside the
# checkout: kube-router (KUBE_ROUTER_VERSION) from its Go module, run on each node with its firewall
# controller alone (iptables and ipset; decision 38). The ipset and iptables programs it calls come
# from NODE_DEBIAN_PACKAGES. The binary lands under a temporary name and is renamed into place only
# when it linked.
set -euo pipefail

here="$(dirname "$0")"
source "$here/../toolchain.env"
source "$here/build-lib.sh"
log_prefix=network-policy

build_kube_router() {
  local dest="$CACHE/kube-router/$KUBE_ROUTER_VERSION"
  [[ -x "$dest/kube-router" ]] && return 0
  log "building kube-router $KUBE_ROUTER_VERSION (first run only; cached in $dest)"
  local module=github.com/cloudnativelabs/kube-router/v2
  local work; work=$(new_work_dir kube-router-build)
  (
    cd "$work"
    go mod init kvpool.local/kube-router-build >/dev/null 2>&1
    with_progress "resolving kube-router" go get "$module/cmd/kube-router@$KUBE_ROUTER_VERSION"
    # The version it logs at start, as its release builds stamp it.
    local ldflags="-s -w -X $module/pkg/version.Version=$KUBE_ROUTER_VERSION"
    with_progress "compiling kube-router" env CGO_ENABLED=0 \
      go build -trimpath -ldflags "$ldflags" -o "$work/out/kube-router" "$module/cmd/kube-router"
  )
  "$work/out/kube-router" --version >/dev/null || { log "the kube-router binary does not run"; exit 1; }
  land "$work/out" "$dest"
}

require_go
build_kube_router
log "kube-router $KUBE_ROUTER_VERSION ready in $CACHE/kube-router"
