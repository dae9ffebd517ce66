#!/usr/bin/env bash
# Installs devtime's build and test dependencies from Debian's packages (bookworm).
# The one list used by the README, CI (.ci/run via deploy/test.sh) and deploy/quickstart.sh.
# Does nothing when everything is already installed, so a normal user without sudo can
# build once an administrator has installed the packages.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config ccache git procps
  protobuf-compiler libprotobuf-dev protobuf-compiler-grpc libgrpc++-dev
  libpqxx-dev postgresql libssl-dev openssl
  postgresql-15-auto-failover pg-auto-failover-cli
  prometheus-cpp-dev libcurl4-openssl-dev
  prometheus prometheus-alertmanager chromium
  nlohmann-json3-dev libsimdjson-dev libcli11-dev libyaml-cpp-dev zlib1g-dev libisal-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  python3-torch
)
# kubectl (kubectl kustomize) for tests/k8s. Only when there is none: another package's
# kubectl (Google Cloud's `kubectl`, say) owns /usr/bin/kubectl and would make the install fail.
command -v kubectl >/dev/null 2>&1 || PACKAGES+=(kubernetes-client)

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "devtime: installing ${#missing[@]} Debian packages: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo)
else
  echo "devtime: these packages are missing and installing them needs root:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "devtime: packages installed"
