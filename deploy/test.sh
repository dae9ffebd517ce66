#!/usr/bin/env bash
# Runs every devtime test: installs the Debian packages (deploy/install-deps.sh), builds,
# starts a private PostgreSQL cluster under .devtime/test-pg (any free loopback port), runs
# the whole CTest suite (unit, integration against that PostgreSQL and real gRPC/processes,
# the Python harness on Debian's python3-torch), and stops the cluster again. With no
# arguments it also builds the Release configuration (-O3) into build-release, warnings as
# errors, so that a warning only the optimiser raises can never break a user's build, and
# fuzzes every trace reader for 60 s (deploy/fuzz.sh: clang, libFuzzer, ASan + UBSan; a
# finding fails the run and leaves its reproducer under .devtime/fuzz/findings/).
#
#   deploy/test.sh            everything
#   deploy/test.sh -R Store   only tests matching a CTest regex (extra args go to ctest)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

deploy/install-deps.sh

build=${DEVTIME_BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
echo "devtime: building in $build with $jobs jobs"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEVTIME_WERROR=ON >/dev/null
cmake --build "$build" -j "$jobs"
if [[ $# -eq 0 ]]; then
  release=${DEVTIME_RELEASE_BUILD_DIR:-build-release}
  echo "devtime: building the Release configuration in $release (warnings as errors)"
  cmake -S . -B "$release" -DCMAKE_BUILD_TYPE=Release -DDEVTIME_WERROR=ON >/dev/null
  cmake --build "$release" -j "$jobs"
fi

pg_dir="$root/.devtime/test-pg"
deploy/pg.sh start "$pg_dir"
trap 'deploy/pg.sh stop "$pg_dir" || true' EXIT
export DEVTIME_TEST_DATABASE
DEVTIME_TEST_DATABASE=$(deploy/pg.sh conninfo "$pg_dir")
export DEVTIME_TEST_PG_DIR="$pg_dir"
echo "devtime: test database $DEVTIME_TEST_DATABASE"

ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 600 "$@"
if [[ $# -eq 0 ]]; then
  deploy/fuzz.sh
fi
