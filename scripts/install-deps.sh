#!/usr/bin/env bash
# Installs what Syncopate needs to build, test and run on Debian 12 (as root, or with sudo).
# Idempotent: does nothing when every package is already present.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev libopenblas-dev zlib1g-dev
  libxxhash-dev libzip-dev clang-14 libclang-rt-14-dev
  nlohmann-json3-dev libspdlog-dev libcli11-dev gnuplot-nox prometheus curl libcurl4-openssl-dev libssl-dev openssl
  dataset-fashion-mnist
  python3-dev pybind11-dev python3-pybind11 python3-numpy python3-torch python3-pytest
  python3-pip python3-setuptools python3-wheel python3-venv
  nodejs unzip yamllint python3-yaml iproute2 docker.io debootstrap spin graphviz
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
echo "installing: ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
