# Bash completion for devtimectl, devtime-agent and devtime-collector. It asks the program
# itself (`--help` of the command typed so far), so it never goes stale as commands change.
# The quickstart's env (eval "$(deploy/quickstart.sh env)") sources it; or by hand:
#   source deploy/completions/devtime.bash          (bash)
#   source deploy/completions/devtime.zsh           (zsh)

# _devtime_help_section PROGRAM... SECTION: the first words of the lines under SECTION
# ("Subcommands" or "Options") of PROGRAM...'s --help.
_devtime_help_section() {
  local section=${*: -1}
  local -a command=("${@:1:$#-1}")
  "${command[@]}" --help 2>/dev/null | awk -v section="$section:" '
    $0 == section { inside = 1; next }
    /^[A-Za-z].*:$/ { inside = 0 }
    inside && /^  [^ ]/ {
      n = split($1, names, ",")
      for (i = 1; i <= n; ++i) { sub(/=.*/, "", names[i]); print names[i] }
    }'
}

_devtime_complete() {
  local current=${COMP_WORDS[COMP_CWORD]}
  local -a command=("${COMP_WORDS[0]}")
  local word i
  # The subcommands typed so far (each checked against its parent's list, so option values
  # such as `--collector 127.0.0.1:1` are passed over).
  for ((i = 1; i < COMP_CWORD; ++i)); do
    word=${COMP_WORDS[i]}
    [[ $word == -* ]] && continue
    if _devtime_help_section "${command[@]}" Subcommands | grep -qx -- "$word"; then
      command+=("$word")
    fi
  done
  local candidates
  if [[ $current == -* ]]; then
    candidates=$(_devtime_help_section "${command[@]}" Options)
  else
    candidates=$(_devtime_help_section "${command[@]}" Subcommands)
  fi
  if [[ -z $candidates && $current != -* ]]; then
    COMPREPLY=($(compgen -f -- "$current"))  # a file or folder argument
    return
  fi
  COMPREPLY=($(compgen -W "$candidates" -- "$current"))
}

complete -o default -F _devtime_complete devtimectl devtime-agent devtime-collector
