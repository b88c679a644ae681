#!/usr/bin/env bash
# `make images`: build the API image and the CPU worker image from deploy/, with Docker when a daemon answers,
# else with Podman (installed from Debian when missing), and print their sizes and build times.
#
# Where the upstream base images (python:3.11-slim, node:20, ubuntu/nvidia-cuda) cannot be pulled (no registry
# reachable, as on the development machines), both images are built on a local Debian bookworm base made here
# with mmdebstrap from the machine's Debian mirror (localhost/rft-debian-python:bookworm: python3.11, venv, pip).
# Builds run with the host network and see the machine's package configuration: its CA bundle (an intercepting
# proxy's CA lives there), its pip configuration (indexes, find-links) and the local wheel folders it names, all
# mounted for the build steps only (nothing of it ends up in an image).
#
# Environment: RFT_IMAGE_TAG (default 0.1.0), RFT_BASE=upstream|local|auto (default auto: local when the upstream
# python base cannot be pulled), RFT_GPU_CHECK=0 to skip the GPU image's check.
set -euo pipefail
cd "$(dirname "$0")/.."

TAG="${RFT_IMAGE_TAG:-0.1.0}"
LOCAL_BASE="localhost/rft-debian-python:bookworm"
STATE=.state/images
mkdir -p "$STATE"

log() { printf 'images: %s\n' "$*"; }

# --- the container engine ------------------------------------------------------------------------------------
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  CLI=docker
else
  CLI=podman
  if ! command -v podman >/dev/null || ! command -v mmdebstrap >/dev/null || ! command -v runc >/dev/null; then
    log "installing podman, runc and mmdebstrap from Debian"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc mmdebstrap >/dev/null
  fi
  # This machine kind refuses Podman's default ulimits and crun's cgroup handling (no systemd, cgroup v1).
  if [ ! -f /etc/containers/containers.conf ] || ! grep -q '^default_ulimits = \[\]' /etc/containers/containers.conf; then
    log "writing /etc/containers/containers.conf (runc, cgroupfs, no default ulimits)"
    mkdir -p /etc/containers
    cat > /etc/containers/containers.conf <<'CONF'
# Written by scripts/images.sh: root Podman on machines without systemd as PID 1 (cgroup v1).
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  fi
fi
log "engine: $CLI ($($CLI --version))"

# --- the build's view of the machine's package configuration (Podman: mounted per build step) -----------------
BUILD_ARGS=(--network=host)
if [ "$CLI" = podman ]; then
  BUILD_ARGS+=(--format docker)  # keeps HEALTHCHECK (the OCI format drops it)
  if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    BUILD_ARGS+=(-v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/host-ca-certificates.crt:ro)
    CERT_LINE="cert = /etc/ssl/certs/host-ca-certificates.crt"
    printf 'cafile=/etc/ssl/certs/host-ca-certificates.crt\naudit=false\nfund=false\nupdate-notifier=false\n' \
      > "$STATE/npmrc"
    BUILD_ARGS+=(-v "$PWD/$STATE/npmrc:/root/.npmrc:ro")
  else
    CERT_LINE=""
  fi
  # pip: the host's find-links / extra indexes (local wheel folders included) and its certificate bundle
  FIND_LINKS=$(.venv/bin/python -m pip config get global.find-links 2>/dev/null || echo "${PIP_FIND_LINKS:-}")
  EXTRA=$(.venv/bin/python -m pip config get global.extra-index-url 2>/dev/null || echo "${PIP_EXTRA_INDEX_URL:-}")
  {
    echo "[global]"
    [ -n "$CERT_LINE" ] && echo "$CERT_LINE"
    echo "default-timeout = 180"
    echo "disable-pip-version-check = 1"
    [ -n "$FIND_LINKS" ] && echo "find-links = $FIND_LINKS"
    [ -n "$EXTRA" ] && echo "extra-index-url = $EXTRA"
  } > "$STATE/pip.conf"
  BUILD_ARGS+=(-v "$PWD/$STATE/pip.conf:/etc/pip.conf:ro")
  for ref in $FIND_LINKS $EXTRA; do
    dir="${ref#file://}"
    case "$ref" in /*|file://*) ;; *) continue ;; esac
    dir="${dir%/simple}"
    [ -d "$dir" ] && BUILD_ARGS+=(-v "$dir:$dir:ro")
  done
fi

# --- which bases ---------------------------------------------------------------------------------------------
python_base=$(sed -n 's/^ARG PYTHON_IMAGE=//p' deploy/Dockerfile.api)
BASE_MODE="${RFT_BASE:-auto}"
if [ "$BASE_MODE" = auto ]; then
  if timeout 60 "$CLI" pull -q "$python_base" >/dev/null 2>&1; then BASE_MODE=upstream; else BASE_MODE=local; fi
fi
API_BASES=()
WORKER_BASES=(--build-arg "TORCH_INDEX=https://download.pytorch.org/whl/cpu" --build-arg "BASE_IMAGE=ubuntu:24.04")
if [ "$BASE_MODE" = local ]; then
  log "upstream base $python_base cannot be pulled here: building on the local Debian base $LOCAL_BASE"
  if ! "$CLI" image exists "$LOCAL_BASE" 2>/dev/null && ! "$CLI" image inspect "$LOCAL_BASE" >/dev/null 2>&1; then
    t0=$(date +%s)
    bash scripts/debian_base.sh "$CLI" "$LOCAL_BASE" "$STATE/debian-bookworm.tar"
    log "local base built in $(( $(date +%s) - t0 )) s"
  fi
  API_BASES=(--build-arg "NODE_IMAGE=$LOCAL_BASE" --build-arg "PYTHON_IMAGE=$LOCAL_BASE")
  # torch 2.13.0 CPU: the index the machine's pip configuration reaches (its local wheels win for +cpu)
  WORKER_BASES=(--build-arg "BASE_IMAGE=$LOCAL_BASE" --build-arg "TORCH_INDEX=https://pypi.org/simple")
fi

build() {  # name, dockerfile, tag, extra args...
  local name=$1 file=$2 tag=$3
  shift 3
  local t0
  t0=$(date +%s)
  log "building $tag from $file"
  if ! "$CLI" build "${BUILD_ARGS[@]}" "$@" -f "$file" -t "$tag" . > "$STATE/$name.build.log" 2>&1; then
    tail -n 30 "$STATE/$name.build.log"
    log "FAILED: $tag (full log: $STATE/$name.build.log)"
    return 1
  fi
  echo "$(( $(date +%s) - t0 ))" > "$STATE/$name.seconds"
}

build api deploy/Dockerfile.api "localhost/rft-api:$TAG" "${API_BASES[@]}"
build worker deploy/Dockerfile.worker "localhost/rft-worker:$TAG-cpu" "${WORKER_BASES[@]}"

# The GPU worker image: its CUDA base comes from NVIDIA's registry; where that cannot be pulled, say so.
if [ "${RFT_GPU_CHECK:-1}" != 0 ]; then
  gpu_base=$(sed -n 's/^ARG BASE_IMAGE=//p' deploy/Dockerfile.worker)
  if timeout 60 "$CLI" pull -q "$gpu_base" >/dev/null 2>&1; then
    build worker-gpu deploy/Dockerfile.worker "localhost/rft-worker:$TAG-cu128" || true
  else
    echo "$gpu_base" > "$STATE/gpu-base-unreachable"
    log "GPU image not built: its base $gpu_base cannot be pulled here (no registry); the CPU worker image above"
    log "  runs the same Dockerfile past its FROM (the build arguments are the only difference)"
  fi
fi

printf '\n%-36s %10s %10s\n' image size_MB build_s
for pair in "api:localhost/rft-api:$TAG" "worker:localhost/rft-worker:$TAG-cpu"; do
  name=${pair%%:*}
  ref=${pair#*:}
  size=$("$CLI" image inspect --format '{{.Size}}' "$ref")
  printf '%-36s %10s %10s\n' "$ref" "$(awk "BEGIN { printf \"%.0f\", $size / 1000000 }")" "$(cat "$STATE/$name.seconds")"
done
