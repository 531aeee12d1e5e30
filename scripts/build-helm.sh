#!/usr/bin/env bash
# Builds the Helm CLI from Go modules, once per version, into a cache outside the checkout: Helm 3
# (HELM_VERSION, the one the project runs) and Helm 4 (HELM4_VERSION, which the tests use to show the
# chart works with both). A build lands under a temporary name and is renamed into place only when
# the binary linked, so an interrupted build never leaves something that looks complete.
set -euo pipefail

source "$(dirname "$0")/../toolchain.env"
CACHE="${KVPOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvpool}"

log() { printf '[helm] %s\n' "$*" >&2; }

work_dirs=()
cleanup() { ((${#work_dirs[@]})) && rm -rf "${work_dirs[@]}"; return 0; }
trap cleanup EXIT

# build_helm <major> <version>: helm.sh/helm/v<major>/cmd/helm at <version> into $CACHE/helm/<version>/helm.
build_helm() {
  local major=$1 version=$2
  local dest="$CACHE/helm/$version"
  [[ -x "$dest/helm" ]] && return 0
  log "building helm $version (first run only; a few minutes; cached in $dest)"
  local module="helm.sh/helm/v$major"
  local work; work=$(mktemp -d "$CACHE/tmp/helm-build.XXXXXX")
  work_dirs+=("$work")
  (
    cd "$work"
    go mod init kvpool.local/helm-build >/dev/null 2>&1
    go get "$module/cmd/helm@$version" >/dev/null 2>&1 || { log "could not download $module@$version"; exit 1; }
    # As Helm's own Makefile: the release version, and the Kubernetes version `helm template` and
    # `helm lint` assume without a cluster, taken from the client-go the release links.
    local client_go kube_minor
    client_go=$(go list -m -f '{{.Version}}' k8s.io/client-go)
    kube_minor=$(echo "$client_go" | cut -d. -f2)
    local ldflags="-s -w -X $module/internal/version.version=$version -X $module/internal/version.metadata="
    if [[ $major == 3 ]]; then
      ldflags+=" -X $module/pkg/lint/rules.k8sVersionMajor=1 -X $module/pkg/lint/rules.k8sVersionMinor=$kube_minor"
      ldflags+=" -X $module/pkg/chartutil.k8sVersionMajor=1 -X $module/pkg/chartutil.k8sVersionMinor=$kube_minor"
    fi
    CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$work/out/helm" "$module/cmd/helm"
  )
  "$work/out/helm" version --short >/dev/null || { log "the helm $version binary does not run"; exit 1; }
  mkdir -p "$(dirname "$dest")"
  rm -rf "$dest.partial" && mv "$work/out" "$dest.partial" && mv "$dest.partial" "$dest"
}

command -v go >/dev/null || { log "Go is not installed: install a Go toolchain (1.26 or newer) and re-run"; exit 1; }
mkdir -p "$CACHE/tmp"
build_helm 3 "$HELM_VERSION"
build_helm 4 "$HELM4_VERSION"
log "helm $HELM_VERSION and $HELM4_VERSION ready in $CACHE/helm"
