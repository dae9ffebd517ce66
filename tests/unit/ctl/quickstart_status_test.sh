#!/usr/bin/env bash
# `deploy/quickstart.sh status` on a stack that is not running says so for each part and exits
# 3, so a script can tell (issue 22). Usage: quickstart_status_test.sh SOURCE_DIR
set -u
stack=$(mktemp -d)
trap 'rm -rf "$stack"' EXIT
out=$(DEVTIME_QUICKSTART_DIR=$stack "$1/deploy/quickstart.sh" status)
code=$?
failures=0
if [[ $code -ne 3 ]]; then
  echo "FAIL: status of a stopped stack exited $code, wanted 3"
  failures=1
fi
for part in collector agent postgresql; do
  if ! grep -qx "$part: stopped" <<<"$out"; then
    echo "FAIL: no '$part: stopped' in: $out"
    failures=1
  fi
done
[[ $failures -eq 0 ]] && echo "quickstart status: all cases pass"
exit $failures
