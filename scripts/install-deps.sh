#!/usr/bin/env bash
# Installs what placer needs from Debian 12's packages, and only what is missing.
# Idempotent; downloads nothing from anywhere else. Run as root (or with sudo).
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  libtorch-dev          # LibTorch 1.13 (CPU): runtime kernels, policies, TorchScript import
  cppzmq-dev            # ZeroMQ service
  libcereal-dev         # JSON / binary serialization
  prometheus-cpp-dev    # metrics exposition
  libgtest-dev libgmock-dev
  coinor-libcbc-dev     # ILP and LP baselines (CBC / CLP)
  libmetis-dev          # min-cut baseline
  libcli11-dev          # command line
  libspdlog-dev         # logging
  libyaml-cpp-dev       # YAML configs
  prometheus            # the real server, for the metrics integration test
  python3 python3-zmq   # the Python client example and its test
  python3-torch python3-torchvision  # makes the TorchScript test fixtures (PyTorch 1.13)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
