# Bash completion for devtimectl, devtime-agent and devtime-collector. It asks the program
# itself (`--help` of the command typed so far), so it never goes stale as commands change.
# The quickstart's env (eval "$(deploy/quickstart.sh env)") sources it; or by hand:
#   source deploy/completions/devtime.bash          (bash)
#   source deploy/completions/devtime.zsh           (zsh)
#
# What it offers: subcommands; options after "-"; an option's allowed values where --help
# lists them ("--format TEXT:{table,json,ids}"); run ids (and latest) for RUN arguments and
# --run/--against, and regression ids for ID, asked of the collector the command line names
# (2 s at most; only latest when it does not answer); files where a file or folder goes.

# _devtime_help_section PROGRAM... SECTION: the first words of the lines under SECTION
# ("Subcommands", "Options" or "Positionals") of PROGRAM...'s --help.
_devtime_help_section() {
  _devtime_help_lines "$@" | awk '{ print $1 }'
}

# _devtime_help_lines PROGRAM... SECTION: "NAME TYPE" for each name on the lines under
# SECTION (TYPE "" for a flag or a subcommand); an option's aliases ("--jobs,-j") each.
_devtime_help_lines() {
  local section=${*: -1}
  local -a command=("${@:1:$#-1}")
  "${command[@]}" --help 2>/dev/null | awk -v section="$section:" '
    $0 == section { inside = 1; next }
    /^[A-Za-z].*:$/ { inside = 0 }
    inside && /^  [^ ]/ {
      type = ($2 ~ /^[A-Z]+(:|=|$)/) ? $2 : ""
      n = split($1, names, ",")
      for (i = 1; i <= n; ++i) { sub(/=.*/, "", names[i]); print names[i], type }
    }'
}

# _devtime_ask PROGRAM GLOBAL_FLAGS... -- ARGS...: PROGRAM's answer to ARGS with the global
# flags typed on the command line (where the collector is, the token), within 2 s.
_devtime_ask() {
  local program=$1 word
  shift
  local -a flags=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    word=$1
    shift
    if [[ $word == --timeout ]]; then shift; continue; fi  # ours is 2 s
    [[ $word == --timeout=* ]] || flags+=("$word")
  done
  shift
  timeout 3 "$program" "${flags[@]}" --timeout 2 "$@" 2>/dev/null
}

_devtime_complete() {
  local current=${COMP_WORDS[COMP_CWORD]}
  local previous=${COMP_WORDS[COMP_CWORD - 1]}
  local -a command=("${COMP_WORDS[0]}") globals=() positionals=()
  local word i first_subcommand=0
  # The subcommands typed so far (each checked against its parent's list, so option values
  # such as `--collector 127.0.0.1:1` are passed over), and the words after the last one
  # that are not options or their values: the positionals typed.
  local options takes_value=""
  for ((i = 1; i < COMP_CWORD; ++i)); do
    word=${COMP_WORDS[i]}
    if [[ -n $takes_value ]]; then
      takes_value=""
      ((first_subcommand == 0)) && globals+=("$word")
      continue
    fi
    if [[ $word == -* ]]; then
      ((first_subcommand == 0)) && globals+=("$word")
      options=$(_devtime_help_lines "${command[@]}" Options)
      [[ $word != *=* ]] && grep -q -- "^$word [A-Z]" <<<"$options" && takes_value=1
      continue
    fi
    if _devtime_help_section "${command[@]}" Subcommands | grep -qx -- "$word"; then
      command+=("$word")
      ((first_subcommand == 0)) && first_subcommand=$i
      positionals=()
    else
      positionals+=("$word")
    fi
  done
  local candidates what=""
  if [[ $current == -* ]]; then
    candidates=$(_devtime_help_section "${command[@]}" Options)
  elif [[ $previous == -* && $COMP_CWORD -gt 1 ]]; then
    # An option's value: its allowed values, a run, or a file.
    local type
    type=$(_devtime_help_lines "${command[@]}" Options | awk -v o="$previous" '$1 == o { print $2 }')
    if [[ $type == *:\{*\}* ]]; then
      candidates=$(sed 's/.*:{\([^}]*\)}.*/\1/; s/,/ /g' <<<"$type")
    elif [[ $previous == --run || $previous == --against ]]; then
      what=runs
    elif [[ -n $type ]]; then
      COMPREPLY=($(compgen -f -- "$current"))
      return
    else
      candidates=$(_devtime_help_section "${command[@]}" Subcommands)  # it was a flag
    fi
  else
    candidates=$(_devtime_help_section "${command[@]}" Subcommands)
    if [[ -z $candidates ]]; then
      # The positional being typed: what its name in --help says it is.
      local name
      name=$(_devtime_help_section "${command[@]}" Positionals | sed -n "$((${#positionals[@]} + 1))p")
      case "$name" in
        RUN | RUN_A | RUN_B) what=runs ;;
        ID) what=regressions ;;
      esac
    fi
  fi
  case "$what" in
    runs) candidates="latest $(_devtime_ask "${command[0]}" "${globals[@]}" -- runs list \
      --format ids --limit 50)" ;;
    regressions) candidates=$(_devtime_ask "${command[0]}" "${globals[@]}" -- regressions list \
      --all --format ids --limit 50) ;;
  esac
  if [[ -z $candidates && -z $what && $current != -* ]]; then
    COMPREPLY=($(compgen -f -- "$current"))  # a file or folder argument
    return
  fi
  COMPREPLY=($(compgen -W "$candidates" -- "$current"))
  # Values that match nothing are no licence to offer files (complete -o default would).
  [[ ${#COMPREPLY[@]} -eq 0 ]] && type compopt &>/dev/null && compopt +o default 2>/dev/null
  return 0
}

complete -o default -F _devtime_complete devtimectl devtime-agent devtime-collector
