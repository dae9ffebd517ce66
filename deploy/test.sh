#!/usr/bin/env bash
# Runs every devtime test: installs the Debian packages (deploy/install-deps.sh), builds,
# starts a private PostgreSQL cluster under .devtime/test-pg (any free loopback port), runs
# the whole CTest suite (unit, integration against that PostgreSQL and real gRPC/processes,
# the Python harness on Debian's python3-torch), and stops the cluster again.
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
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$jobs"

pg_dir="$root/.devtime/test-pg"
deploy/pg.sh start "$pg_dir"
trap 'deploy/pg.sh stop "$pg_dir" || true' EXIT
export DEVTIME_TEST_DATABASE
DEVTIME_TEST_DATABASE=$(deploy/pg.sh conninfo "$pg_dir")
export DEVTIME_TEST_PG_DIR="$pg_dir"
echo "devtime: test database $DEVTIME_TEST_DATABASE"

ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 600 "$@"
