# Zsh completion for devtimectl, devtime-agent and devtime-collector: the bash completion
# (devtime.bash) through zsh's bashcompinit.
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
source "${0:A:h}/devtime.bash"
