#!/usr/bin/env bash
# deploy/completions/devtime.bash completes what the programs' --help says: subcommands at
# each level (option values passed over), options after "-", an option's allowed values,
# runs for RUN arguments, for all three executables.
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
# An option's allowed values, never file names (issue 22).
expect "table json ids" devtimectl runs list --format ""
expect "json" devtimectl runs show --format j
expect "markdown" devtimectl check --format m
expect "" devtimectl runs list --format yaml
# A run: latest, and the collector's run ids (none here: nothing listens on port 1).
expect "latest" devtimectl --collector 127.0.0.1:1 runs show ""
expect "latest" devtimectl --collector 127.0.0.1:1 compare latest ""
expect "latest" devtimectl --collector 127.0.0.1:1 check --format text --run l
expect "" devtimectl --collector 127.0.0.1:1 regressions show ""

[[ $failures -eq 0 ]] && echo "completion: all cases pass"
exit $((failures > 0))
