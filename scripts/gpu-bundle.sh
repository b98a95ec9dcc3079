#!/usr/bin/env bash
# Prepares, on a development machine (Debian 12, with a package registry), what
# a bare GPU machine needs to build and test placer: that machine has nvcc,
# CMake, ninja and torch 2.11.0+cu130 but none of our Debian libraries and no
# network. `make gpu-bundle` runs this.
#
#   scripts/gpu-bundle.sh [OUT]     (default gpu-bundle/, git-ignored; at most 60 MiB)
#
# OUT/debs/*.deb      the Debian packages of our C++ dependencies and what they
#                     need beyond a base system, fetched with `apt-get download`;
#                     scripts/gpu-check.sh unpacks them with `dpkg -x` into a
#                     prefix (never into /).
# OUT/wheels/*.whl    pyzmq for the GPU machine's Python 3.12 (the client test).
# OUT/MANIFEST        package names and versions, and how it was made.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-gpu-bundle}
LIMIT_MIB=60

# What placer links or includes, as on the development machine.
ROOTS=(cppzmq-dev libzmq3-dev libcereal-dev rapidjson-dev prometheus-cpp-dev libcivetweb-dev libgtest-dev libgmock-dev
       coinor-libcbc-dev libmetis-dev libcli11-dev libspdlog-dev libfmt-dev libyaml-cpp-dev pkgconf libtcmalloc-minimal4)
# A base system has these (the C library, the compiler's runtime, compression,
# TLS); and of the alternatives for BLAS/LAPACK the reference ones are enough.
SKIP='^(libc6|libc6-dev|libc-dev-bin|linux-libc-dev|libgcc-s1|gcc-12-base|libstdc\+\+6|libcrypt1|libcrypt-dev|libssl3|zlib1g|libzstd1|liblzma5|libbz2-1\.0|libgomp1|libffi8|libgmp10|libunistring2|libidn2-0|libp11-kit0|libtasn1-6|libnettle8|libhogweed6|libgnutls30|libmd0|libbsd0|libdb5\.3|libatlas.*|libblis.*|libopenblas.*|libicu-dev|icu-devtools|libxml2-dev|catch2|googletest|libnsl-dev|libtirpc-dev|rpcsvc-proto|libkrb5-dev|krb5-multidev|comerr-dev|libbsd-dev|libmd-dev)$'

if ! command -v apt-get >/dev/null; then
  echo "gpu-bundle: needs apt-get (a Debian machine with its package registry)" >&2
  exit 2
fi
rm -rf "$OUT"
mkdir -p "$OUT/debs" "$OUT/wheels"
apt-get update -qq >/dev/null 2>&1 || true
mapfile -t PKGS < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
                      --no-replaces --no-enhances "${ROOTS[@]}" 2>/dev/null | grep -v '^ ' | grep -v '<' | sort -u |
                    grep -Ev "$SKIP")
echo "gpu-bundle: ${#PKGS[@]} Debian packages"
(cd "$OUT/debs" && apt-get download -qq "${PKGS[@]}" >/dev/null 2> "$OUT/apt-download.err") || {
  echo "gpu-bundle: apt-get download failed (is the package index current? apt-get update):" >&2
  cat "$OUT/apt-download.err" >&2
  exit 1
}
rm -f "$OUT/apt-download.err"

# pyzmq for the GPU machine's Python (3.12, x86-64), for the Python client test.
PY=${PLACER_PYTHON:-.venv/bin/python3}
PYZMQ=$(sed -n 's/^pyzmq==\([^ ]*\).*/\1/p' scripts/requirements.txt)
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$OUT/wheels" "pyzmq==$PYZMQ"

{
  echo "# placer GPU bundle, made $(date -u +%Y-%m-%dT%H:%MZ) by scripts/gpu-bundle.sh at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  (cd "$OUT/debs" && ls *.deb)
  (cd "$OUT/wheels" && ls)
} > "$OUT/MANIFEST"
size=$(du -sm "$OUT" | cut -f1)
echo "gpu-bundle: $OUT is ${size} MiB ($(ls "$OUT/debs" | wc -l) .deb, $(ls "$OUT/wheels" | wc -l) wheel)"
if [ "$size" -gt "$LIMIT_MIB" ]; then
  echo "gpu-bundle: over the ${LIMIT_MIB} MiB a device call can carry" >&2
  exit 1
fi
