#!/usr/bin/env bash
# Installs what placer needs, and only what is missing:
#   1. Debian 12 packages (compilers, cppzmq, cereal, prometheus-cpp, GoogleTest,
#      CBC, METIS, CLI11, spdlog, yaml-cpp, tcmalloc, the prometheus server);
#   2. a project-local Python environment, $PLACER_VENV (default .venv, git-ignored),
#      with scripts/requirements.txt from PyPI: torch==2.11.0, whose C++ libraries
#      are placer's LibTorch (CUDA 13.0 build), torchvision, pyzmq, numpy.
# Idempotent. Run as root (or with sudo for the Debian part).
#   PLACER_SKIP_APT=1   skip the Debian part (e.g. on a machine without a package registry)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${PLACER_VENV:-$ROOT/.venv}

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  cppzmq-dev            # ZeroMQ service
  libcereal-dev         # JSON / binary serialization
  prometheus-cpp-dev    # metrics exposition
  libgtest-dev libgmock-dev
  coinor-libcbc-dev     # ILP and LP baselines (CBC / CLP)
  libmetis-dev          # min-cut baseline
  libcli11-dev          # command line
  libspdlog-dev         # logging
  libyaml-cpp-dev       # YAML configs
  libtcmalloc-minimal4  # the programs' malloc (gperftools; bench/results/allocator_cpu2.md)
  prometheus            # the real server, for the metrics integration test
  python3 python3-venv  # the project environment below
)

if [ "${PLACER_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#PACKAGES[@]} Debian packages present"
  else
    echo "install-deps: installing ${missing[*]}"
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi

# The Python environment: torch 2.11.0 (LibTorch), made once; checked every time.
want_torch=$(sed -n 's/^torch==\([^ ]*\).*/\1/p' scripts/requirements.txt)
if "$VENV/bin/python3" - "$want_torch" 2>/dev/null <<'PY'
import sys, torch, torchvision, zmq, numpy
sys.exit(0 if torch.__version__.split("+")[0] == sys.argv[1] else 1)
PY
then
  echo "install-deps: $VENV has torch $want_torch, torchvision, pyzmq and numpy"
  exit 0
fi
echo "install-deps: installing scripts/requirements.txt into $VENV (4.7 GB once installed, mostly the CUDA 13 wheels; under 2 minutes on the development VM)"
# The wheels are ~3 GB downloaded and 4.7 GB unpacked: say so before pip
# fails halfway with "No space left on device".
mkdir -p "$VENV"
need_gb=8
free_gb=$(df -P -BG "$VENV" | awk 'NR==2 {sub("G", "", $4); print $4}')
if [ -n "$free_gb" ] && [ "$free_gb" -lt "$need_gb" ]; then
  echo "install-deps: $VENV: ${free_gb} GB free on its disk, the Python environment needs ~${need_gb} GB" \
       "(torch's CUDA 13 wheels). Free space there, or set PLACER_VENV to a folder on a disk with room." >&2
  exit 1
fi
[ -x "$VENV/bin/python3" ] || python3 -m venv "$VENV"
# --no-cache-dir: no second copy of the wheels kept in ~/.cache/pip.
"$VENV/bin/python3" -m pip install -q --no-cache-dir --disable-pip-version-check -r scripts/requirements.txt
"$VENV/bin/python3" -c "import torch; print('install-deps: torch', torch.__version__, 'CUDA', torch.version.cuda)"
