# Shared by the build scripts: logging, a heartbeat for long steps, work directories that are removed
# on exit, and landing a finished build atomically. Source it after toolchain.env.
CACHE="${KVPOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvpool}"
log_prefix=${log_prefix:-build}

log() { printf '[%s] %s\n' "$log_prefix" "$*" >&2; }

work_dirs=()
cleanup_work_dirs() { ((${#work_dirs[@]})) && rm -rf "${work_dirs[@]}"; return 0; }
trap cleanup_work_dirs EXIT

# A fresh directory under the cache's tmp/, removed when the script exits.
new_work_dir() {
  mkdir -p "$CACHE/tmp"
  local dir; dir=$(mktemp -d "$CACHE/tmp/$1.XXXXXX")
  work_dirs+=("$dir")
  printf '%s\n' "$dir"
}

# Moves a finished build into place; an interrupted one never looks complete.
land() {
  local from=$1 dest=$2
  mkdir -p "$(dirname "$dest")"
  rm -rf "$dest.partial" && mv "$from" "$dest.partial" && mv "$dest.partial" "$dest"
}

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

require_go() {
  command -v go >/dev/null || { log "Go is not installed: install a Go toolchain (1.24 or newer) and re-run"; exit 1; }
}

# Installs the Debian packages named that are not installed yet (as root, or through sudo).
ensure_debian_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  log "installing Debian packages: ${missing[*]}"
  local sudo=(); [[ $(id -u) == 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
