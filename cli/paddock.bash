# bash completion for paddock(1)

_paddock_boxes()
{
	paddock __complete-boxes 2>/dev/null
	echo current
}

_paddock()
{
	local cur prev words cword
	_init_completion 2>/dev/null || {
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD - 1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	}

	local commands="login new current ls info push pull exec stop start resume rm ttl policy
		ports docker doctor fork snapshot snapshots restore volume token secret desktop screenshot prompt skill help version"
	local globals="--url --token --cacert --json --quiet --verbose --help --version"

	case $prev in
	--url | --token | --name | --image | --env | --ttl | --model | --continue)
		return ;;
	--agent)
		COMPREPLY=($(compgen -W "claude codex opencode pi" -- "$cur"))
		return ;;
	--type)
		COMPREPLY=($(compgen -W "small medium large" -- "$cur"))
		return ;;
	--policy)
		COMPREPLY=($(compgen -W "allow-all deny-all allow:" -- "$cur"))
		return ;;
	--to | -o | --output | --cwd | --cacert)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	esac

	# The command word: the first word that is not an option (or its value).
	local i cmd= sub= nargs=0
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		--url | --token | --cacert | --name | --type | --ttl | --image | --policy | --to | --env | --cwd | -o | --output | \
			--agent | --model | --continue)
			((i++)) ;;
		-*) ;;
		*)
			if [ -z "$cmd" ]; then
				cmd=${words[i]}
			elif [ -z "$sub" ] && { [ "$cmd" = volume ] || [ "$cmd" = token ] || [ "$cmd" = secret ] || [ "$cmd" = skill ]; }; then
				sub=${words[i]}
			else
				nargs=$((nargs + 1))
			fi ;;
		esac
	done

	if [[ $cur == -* ]]; then
		local opts=$globals
		case $cmd in
		login) opts="$opts --password-stdin --ttl" ;;
		new) opts="$opts --name --type --ttl --image --policy --docker --no-docker" ;;
		push) opts="$opts --to" ;;
		pull) opts="$opts --to --owners" ;;
		exec) opts="$opts --desktop --env --cwd" ;;
		prompt) [ "$nargs" = 0 ] && opts="$opts --agent --model --continue --env --cwd" ;;
		volume | screenshot) opts="$opts -o --output" ;;
		desktop) [ "$nargs" -le 1 ] && opts="$opts --no-wait" ;;
		doctor) opts="$opts --config --caddyfile" ;;
		esac
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		return
	fi

	case $cmd in
	"")
		COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
	volume)
		if [ -z "$sub" ]; then
			COMPREPLY=($(compgen -W "create ls rm attach detach export" -- "$cur"))
		elif [ "$nargs" = 0 ] && { [ "$sub" = attach ] || [ "$sub" = detach ]; }; then
			COMPREPLY=($(compgen -W "$(_paddock_boxes)" -- "$cur"))
		fi ;;
	token)
		[ -z "$sub" ] && COMPREPLY=($(compgen -W "ls revoke" -- "$cur")) ;;
	secret)
		# names only, never values: `secret ls` prints none
		if [ -z "$sub" ]; then
			COMPREPLY=($(compgen -W "set ls rm" -- "$cur"))
		elif [ "$nargs" = 0 ] && { [ "$sub" = rm ] || [ "$sub" = set ]; }; then
			COMPREPLY=($(compgen -W "$(paddock secret ls 2>/dev/null | tail -n +2 | cut -d' ' -f1)" -- "$cur"))
		fi ;;
	skill)
		if [ -z "$sub" ]; then
			COMPREPLY=($(compgen -W "install" -- "$cur"))
		else
			COMPREPLY=($(compgen -d -- "$cur"))
		fi ;;
	prompt)
		[ "$nargs" = 0 ] && COMPREPLY=($(compgen -W "$(_paddock_boxes)" -- "$cur")) ;;
	desktop)
		# BOX, then a subcommand or the first word of an action
		if [ "$nargs" = 0 ]; then
			COMPREPLY=($(compgen -W "$(_paddock_boxes)" -- "$cur"))
		elif [ "$nargs" = 1 ]; then
			COMPREPLY=($(compgen -W "on off url windows cursor geometry
				move click double drag scroll type key -" -- "$cur"))
		else
			# the word after an action name, or a new action after ','
			case ${words[cword - 1]} in
			click) COMPREPLY=($(compgen -W "left middle right" -- "$cur")) ;;
			scroll) COMPREPLY=($(compgen -W "up down" -- "$cur")) ;;
			key) COMPREPLY=($(compgen -W "Return Escape Tab BackSpace ctrl+c ctrl+s ctrl+v alt+F4" -- "$cur")) ;;
			,) COMPREPLY=($(compgen -W "move click double drag scroll type key" -- "$cur")) ;;
			geometry) COMPREPLY=($(compgen -W "1280x800 1920x1080 1024x768" -- "$cur")) ;;
			esac
		fi ;;
	screenshot)
		[ "$nargs" = 0 ] && COMPREPLY=($(compgen -W "$(_paddock_boxes)" -- "$cur")) ;;
	info | push | pull | exec | stop | start | resume | rm | ttl | policy | docker | fork | \
		snapshot | snapshots | restore)
		if [ "$nargs" = 0 ]; then
			COMPREPLY=($(compgen -W "$(_paddock_boxes)" -- "$cur"))
		elif [ "$cmd" = push ]; then
			COMPREPLY=($(compgen -f -- "$cur"))
		elif [ "$cmd" = policy ] && [ "$nargs" = 1 ]; then
			COMPREPLY=($(compgen -W "allow-all deny-all allow" -- "$cur"))
		elif [ "$cmd" = docker ] && [ "$nargs" = 1 ]; then
			COMPREPLY=($(compgen -W "on off" -- "$cur"))
		elif [ "$cmd" = ttl ] && [ "$nargs" = 1 ]; then
			COMPREPLY=($(compgen -W "none 3600" -- "$cur"))
		fi ;;
	esac
}
complete -F _paddock paddock
