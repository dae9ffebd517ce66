#!/usr/bin/env bash
# deploy/completions/devtime.bash completes what the programs' --help says: subcommands at
# each level (option values passed over), options after "-", for all three executables.
# Usage: completion_test.sh SOURCE_DIR BIN_DIR
set -u
source_dir=$1
PATH="$2:$PATH"
source "$source_dir/deploy/completions/devtime.bash"

failures=0
expect() {  # expect "WANTED" WORD...: completing the last WORD gives exactly WANTED
  local wanted=$1
  shift
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMPREPLY=()
  _devtime_complete
  if [[ "${COMPREPLY[*]}" != "$wanted" ]]; then
    echo "FAIL: completing '$*' gave '${COMPREPLY[*]}', wanted '$wanted'"
    failures=$((failures + 1))
  fi
}

expect "runs" devtimectl ru
expect "list show traces" devtimectl runs ""
expect "run-now" devtimectl --collector 127.0.0.1:1 jobs r
expect "--model" devtimectl runs list --mo
expect "regressions report" devtimectl re
expect "summarize" devtime-agent su
expect "--database --database-connections" devtime-collector --datab

[[ $failures -eq 0 ]] && echo "completion: all cases pass"
exit $((failures > 0))
