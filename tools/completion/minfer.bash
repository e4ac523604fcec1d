# bash completion for minfer(1), installed as
# /usr/share/bash-completion/completions/minfer (package minfer-tools).
#
# The commands, each command's options and which options take a value are
# read from the tool's own --help (`minfer --help`, `minfer COMMAND --help`),
# so the completion follows the installed tool without a list to keep in
# step. Values: provider names from `minfer providers` after --providers,
# 0-3 after --opt-level and --level, directories after an option whose value
# is DIR, file names after FILE-like values and for models, nothing for
# numbers (N). Needs only bash, not the bash-completion package's helpers.

# _minfer_help PROG [COMMAND]: the help text, cached per command for the
# shell's life (the tool's options do not change while one completes).
_minfer_help() {
    local key=${2:-_}
    local var="_minfer_help_cache_${key//[^A-Za-z0-9_]/_}"
    if [[ -z ${!var+x} ]]; then
        printf -v "$var" '%s' "$("$1" ${2:+"$2"} --help 2>/dev/null)"
    fi
    printf '%s\n' "${!var}"
}

# The command names: first words of the lines under "commands:".
_minfer_commands() {
    _minfer_help "$1" | awk '/^commands:/ {c = 1; next} c && /^[^ ]/ {exit} c && NF {print $1}'
}

# "OPTION VALUE" per option of COMMAND's help ("-" as VALUE when it takes
# none): an option line is "  -o, --output FILE  description", the names and
# value parted from the description by two spaces or more.
_minfer_options() {
    _minfer_help "$1" "$2" | awk '
        /^ +-/ {
            line = $0
            sub(/^ +/, "", line)
            p = index(line, "  ")
            if (p) line = substr(line, 1, p - 1)
            n = split(line, w, /,? +/)
            val = "-"
            m = 0
            for (i = 1; i <= n; i++) {
                if (w[i] ~ /^--?[A-Za-z]/) {
                    opt = w[i]
                    if (opt ~ /=/) {
                        val = substr(opt, index(opt, "=") + 1)
                        opt = substr(opt, 1, index(opt, "=") - 1)
                    }
                    names[++m] = opt
                } else if (m) {
                    val = w[i]
                    break
                }
            }
            for (j = 1; j <= m; j++) print names[j], val
        }'
}

_minfer_providers() {
    "$1" providers 2>/dev/null | awk '$1 == "NAME" && $2 == "VERSION" {p = 1; next} p && /^  [^ ]/ {print $1}'
}

_minfer() {
    local prog=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev= cmd= i
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    # The command: the first word that is not an option (--opt-level takes
    # a value and may come before it).
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        --opt-level | --plugin) ((i++)) ;;
        -*) ;;
        *)
            cmd=${COMP_WORDS[i]}
            break
            ;;
        esac
    done

    if [[ $prev == --opt-level || $prev == --level ]]; then
        mapfile -t COMPREPLY < <(compgen -W '0 1 2 3' -- "$cur")
        return
    fi
    if [[ $prev == --plugin ]]; then # a plugin file (or a plugin's name)
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        compopt -o filenames 2>/dev/null
        return
    fi
    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            mapfile -t COMPREPLY < <(compgen -W '--help --version --opt-level --plugin' -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -W "$(_minfer_commands "$prog")" -- "$cur")
        fi
        return
    fi

    local opts val
    opts=$(_minfer_options "$prog" "$cmd")
    if [[ $prev == -* ]]; then
        val=$(awk -v o="$prev" '$1 == o {print $2; exit}' <<<"$opts")
        case $val in
        '' | -) ;;
        LIST)
            if [[ $prev == --providers ]]; then
                # A comma-separated list: complete the last name.
                local head=${cur%,*} word=${cur##*,} p
                [[ $cur == *,* ]] && head+=, || head=
                for p in $(compgen -W "$(_minfer_providers "$prog")" -- "$word"); do
                    COMPREPLY+=("$head$p")
                done
                compopt -o nospace 2>/dev/null
            fi
            return
            ;;
        DIR*)
            mapfile -t COMPREPLY < <(compgen -d -- "$cur")
            compopt -o filenames 2>/dev/null
            return
            ;;
        FILE* | *.onnx | OUT*)
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            compopt -o filenames 2>/dev/null
            return
            ;;
        *) return ;; # N, NAME=V, ...: nothing to offer
        esac
    fi
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(awk '{print $1}' <<<"$opts")" -- "$cur")
    else
        # Models, test case directories.
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        compopt -o filenames 2>/dev/null
    fi
}
complete -F _minfer minfer
