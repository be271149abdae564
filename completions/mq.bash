# bash completion for mq-pub, mq-sub, mq-ack, mq-topic, mq-dlq, mq-group,
# mq-replicate, mq-stat, mq-req and mq-http.
#
# Topics and groups are read from the spool: the value of -s on the command
# line, else $MQ_SPOOL, else ${XDG_STATE_HOME:-$HOME/.local/state}/mq.  See
# mq-spool(5).

# _mq_parse ARGOPTS: walk the words of the command line except the one being
# completed.  ARGOPTS lists the options that take an argument, space
# separated ("-s -g --lease").  Sets _mq_spool to the spool, _mq_group to the
# value of -g, and _mq_args to the operands, in order.  A "--opt" "=" "value"
# split made by COMP_WORDBREAKS is read as one word.
_mq_parse()
{
	local argopts=" $1 " i=1 w c rest
	local n=${#COMP_WORDS[@]}
	_mq_spool= _mq_group= _mq_args=()
	local optend=
	while ((i < n)); do
		if ((i == COMP_CWORD)); then
			((i++))
			continue
		fi
		w=${COMP_WORDS[i]}
		if [[ -n $optend || $w != -?* ]]; then
			_mq_args+=("$w")
		elif [[ $w == -- ]]; then
			optend=1
		elif [[ $w == --* ]]; then
			local val= has=
			if [[ $w == *=* ]]; then
				val=${w#*=} w=${w%%=*} has=1
			elif [[ ${COMP_WORDS[i+1]} == = ]]; then
				((i++))
				if ((i != COMP_CWORD && i + 1 < n && i + 1 != COMP_CWORD)); then
					((i++))
					val=${COMP_WORDS[i]}
				fi
				has=1
			fi
			if [[ -z $has && $argopts == *" $w "* ]]; then
				((i++))
				val=${COMP_WORDS[i]}
			fi
		else
			# A cluster of short options such as -0lk KEY or -sDIR.
			rest=${w#-}
			while [[ -n $rest ]]; do
				c=-${rest:0:1}
				rest=${rest:1}
				[[ $argopts == *" $c "* ]] || continue
				if [[ -z $rest ]]; then
					((i++))
					((i == COMP_CWORD)) && break
					rest=${COMP_WORDS[i]}
				fi
				case $c in
				-s) _mq_spool=$rest ;;
				-g) _mq_group=$rest ;;
				esac
				break
			done
		fi
		((i++))
	done
	if [[ -n $_mq_spool ]]; then
		[[ $_mq_spool == '~'* ]] && _mq_spool=$HOME${_mq_spool#'~'}
	elif [[ -n $MQ_SPOOL ]]; then
		_mq_spool=$MQ_SPOOL
	else
		_mq_spool=${XDG_STATE_HOME:-$HOME/.local/state}/mq
	fi
}

_mq_topics()
{
	local d
	for d in "$_mq_spool"/topics/*; do
		[[ -d $d ]] && printf '%s\n' "${d##*/}"
	done
}

# _mq_groups [TOPIC]: the groups of TOPIC, or of every topic.
_mq_groups()
{
	local f files
	if [[ -n $1 ]]; then
		files=("$_mq_spool/topics/$1/groups"/*.conf)
	else
		files=("$_mq_spool"/topics/*/groups/*.conf)
	fi
	for f in "${files[@]}"; do
		[[ -f $f ]] || continue
		f=${f##*/}
		printf '%s\n' "${f%.conf}"
	done | sort -u
}

# _mq_partitions TOPIC: the partition numbers of TOPIC.
_mq_partitions()
{
	local d
	for d in "$_mq_spool/topics/$1"/p*; do
		[[ -d $d ]] && printf '%s\n' "${d##*/p}"
	done
}

# _mq_receipts TOPIC GROUP: receipts of the messages now claimed by GROUP.
_mq_receipts()
{
	local d f k
	[[ -n $1 && -n $2 ]] || return
	for d in "$_mq_spool/topics/$1"/p*; do
		k=${d##*/p}
		for f in "$d/g/$2/cur"/*; do
			[[ -f $f ]] || continue
			f=${f##*/}
			printf '%s\n' "$1/$2/$k/${f%:2,}"
		done
	done
}

# _mq_peers: the peers this spool sends to, by spool id and by name.
_mq_peers()
{
	local f id
	for f in "$_mq_spool"/replicate/peers/*; do
		id=${f##*/}
		[[ -f $f && $id =~ ^[0-9a-f]{32}$ ]] || continue
		printf '%s\n' "$id"
		sed -n 's/^name=\(..*\)$/\1/p' "$f" 2>/dev/null
	done | sort -u
}

# _mq_authorized: the keys of authorized_peers, and their names.
_mq_authorized()
{
	local key name
	[[ -f $_mq_spool/replicate/authorized_peers ]] || return
	while read -r key name; do
		[[ $key =~ ^[0-9A-Fa-f]{64}$ ]] || continue
		printf '%s\n' "$key"
		[[ -n $name ]] && printf '%s\n' "$name"
	done <"$_mq_spool/replicate/authorized_peers" | sort -u
}

# _mq_reply WORDLIST CUR: complete CUR from the newline-separated WORDLIST.
# Each match gets the prefix _mq_pre (see _mq_cur_prev).
_mq_reply()
{
	local IFS=$'\n'
	COMPREPLY=($(compgen -P "$_mq_pre" -W "$1" -- "$2"))
}

_mq_dirs()
{
	local IFS=$'\n'
	compopt -o filenames 2>/dev/null
	COMPREPLY=($(compgen -d -- "$1"))
}

# _mq_cur_prev: set cur to the text being completed and prev to the option
# it belongs to, undoing the split of "--opt=value" at '=' that
# COMP_WORDBREAKS makes.  Where '=' does not break words, the word being
# replaced is the whole "--opt=value", so matches need _mq_pre.
_mq_cur_prev()
{
	cur=${COMP_WORDS[COMP_CWORD]}
	prev= _mq_pre=
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD-1]}
	if [[ $cur == = && $prev == --* ]]; then
		cur=
	elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
		prev=${COMP_WORDS[COMP_CWORD-2]}
	elif [[ $cur == --*=* ]]; then
		prev=${cur%%=*}
		_mq_pre=$prev=
		cur=${cur#*=}
	fi
}

_mq_pub()
{
	local cur prev
	_mq_cur_prev
	_mq_parse "-H -i -k -p -s --sync --delay --at --ttl --dedup --replicas --replica-timeout --sign --keygen --pubkey"
	case $prev in
	-s)
		_mq_dirs "$cur"
		return ;;
	--sign|--keygen|--pubkey)
		local IFS=$'\n'
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	-p)
		_mq_reply "$(_mq_partitions "${_mq_args[0]}")" "$cur"
		return ;;
	--sync)
		_mq_reply $'each\nbatch\nnone' "$cur"
		return ;;
	--dedup)
		_mq_reply 'content' "$cur"
		return ;;
	-H|-i|-k|--delay|--at|--ttl|--replicas|--replica-timeout)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		_mq_reply $'-0\n-H\n-i\n-k\n-l\n-p\n-q\n-s\n--sync=\n--delay\n--at\n--ttl\n--atomic\n--no-create\n--dedup=content\n--replicas\n--replica-timeout\n--sign\n--keygen\n--pubkey\n--help' "$cur"
		[[ ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
	elif ((${#_mq_args[@]} == 0)); then
		_mq_reply "$(_mq_topics)" "$cur"
	fi
}

_mq_req()
{
	local cur prev
	_mq_cur_prev
	_mq_parse "-F -H -i -k -s -t"
	case $prev in
	-s)
		_mq_dirs "$cur"
		return ;;
	-F|-H|-i|-k|-t)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		_mq_reply $'-F\n-H\n-i\n-k\n-q\n-s\n-t\n--json\n--help' "$cur"
	elif ((${#_mq_args[@]} == 0)); then
		_mq_reply "$(_mq_topics)" "$cur"
	fi
}

_mq_http()
{
	local cur prev
	_mq_cur_prev
	case $prev in
	-s)
		_mq_dirs "$cur"
		return ;;
	--cert|--key|--jwt-secret|--jwt-key|--jwks)
		local IFS=$'\n'
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	-l|--audience|--issuer|--leeway|--max-connections|--max-body|--rate|--max-wait|--allow-origin)
		return ;;
	esac
	[[ $cur == -* ]] &&
	    _mq_reply $'-l\n-q\n-s\n--cert\n--key\n--plain-anywhere\n--jwt-secret\n--jwt-key\n--jwks\n--audience\n--issuer\n--leeway\n--max-connections\n--max-body\n--rate\n--max-wait\n--allow-origin\n--syslog\n--help' "$cur"
}

_mq_sub()
{
	local cur prev
	_mq_cur_prev
	_mq_parse "-F -g -j -n -s -t --lease --exec --backoff --handler-timeout --max-attempts --grace --publish-to --filter --match --group-filter --group-match --session --from-offset --from-time --key --keygen --pubkey"
	case $prev in
	-s)
		_mq_dirs "$cur"
		return ;;
	--key|--keygen|--pubkey)
		local IFS=$'\n'
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	-g)
		_mq_reply "$(_mq_groups "${_mq_args[0]}")" "$cur"
		return ;;
	--exec)
		local IFS=$'\n'
		COMPREPLY=($(compgen -P "$_mq_pre" -c -- "$cur"))
		return ;;
	--publish-to)
		_mq_reply "$(_mq_topics)" "$cur"
		return ;;
	-F|-j|-n|-t|--lease|--backoff|--handler-timeout|--max-attempts|--grace|--filter|--match|--group-filter|--group-match|--session|--from-offset|--from-time)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		_mq_reply $'-0\n-F\n-f\n-g\n-j\n-n\n-q\n-s\n-t\n--from-start\n--json\n--manual\n--lease\n--exec\n--backoff\n--grace\n--handler-timeout\n--publish-to\n--reply\n--exactly-once\n--max-attempts\n--filter\n--match\n--group-filter\n--group-match\n--ordered\n--session\n--from-offset\n--from-time\n--key\n--keygen\n--pubkey\n--no-create\n--unsubscribe\n--help' "$cur"
	elif ((${#_mq_args[@]} == 0)); then
		_mq_reply "$(_mq_topics)" "$cur"
	fi
}

_mq_ack()
{
	local cur prev
	_mq_cur_prev
	_mq_parse "-g -s --delay --reason --extend --commit"
	case $prev in
	-s)
		_mq_dirs "$cur"
		return ;;
	-g)
		_mq_reply "$(_mq_groups "${_mq_args[0]}")" "$cur"
		return ;;
	--delay|--reason|--extend|--commit)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		_mq_reply $'-g\n-s\n--nack\n--delay\n--reject\n--reason\n--extend\n--commit\n--help' "$cur"
	elif ((${#_mq_args[@]} == 0)); then
		_mq_reply "$(_mq_topics)" "$cur"
	else
		_mq_reply "$(_mq_receipts "${_mq_args[0]}" "$_mq_group")" "$cur"
	fi
}

_mq_topic()
{
	local cur prev
	_mq_cur_prev
	_mq_parse "-s --partitions --max-message-size --retention --ttl --expired --format --place --group --mode --signers --publishers --consumers --admins"
	# --place K=DIR where '=' breaks words: "--place" "K" "=" "DIR".
	if ((COMP_CWORD >= 3)) && [[ ${COMP_WORDS[COMP_CWORD-1]} == = &&
	    ${COMP_WORDS[COMP_CWORD-3]} == --place ]]; then
		_mq_dirs "$cur"
		return
	elif ((COMP_CWORD >= 2)) && [[ $cur == = &&
	    ${COMP_WORDS[COMP_CWORD-2]} == --place ]]; then
		_mq_dirs ""
		return
	fi
	case $prev in
	-s)
		_mq_dirs "$cur"
		return ;;
	--place)
		# K=DIR, where '=' does not break words: a directory after it.
		if [[ $cur == *=* ]]; then
			local IFS=$'\n'
			compopt -o filenames 2>/dev/null
			COMPREPLY=($(compgen -d -P "${cur%%=*}=" -- "${cur#*=}"))
		fi
		return ;;
	--expired)
		_mq_reply $'dlq\ndrop' "$cur"
		return ;;
	--format)
		_mq_reply $'1\n2' "$cur"
		return ;;
	--group|--publishers|--consumers|--admins)
		_mq_reply "$(compgen -g)" "$cur"
		return ;;
	--signers)
		local IFS=$'\n'
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--partitions|--max-message-size|--retention|--ttl|--mode)
		return ;;
	esac
	local cmd=${_mq_args[0]}
	# Options may come before or after the command (getopt_long permutes).
	if [[ $cur == -* ]]; then
		case $cmd in
		'')     _mq_reply $'-s\n--help' "$cur" ;;
		init) _mq_reply $'-s\n--group\n--mode' "$cur" ;;
		create) _mq_reply $'-s\n--partitions\n--max-message-size\n--retention\n--ttl\n--expired\n--format\n--place\n--signers\n--group\n--mode\n--publishers\n--consumers\n--admins' "$cur" ;;
		alter) _mq_reply $'-s\n--partitions\n--place\n--signers\n--no-signers' "$cur" ;;
		list|info) _mq_reply $'-s\n--json' "$cur" ;;
		delete|gc|upgrade|key) _mq_reply $'-s' "$cur" ;;
		esac
	elif [[ -z $cmd ]]; then
		_mq_reply $'init\ncreate\nalter\nlist\ninfo\ndelete\ngc\nupgrade\nkey' "$cur"
	elif ((${#_mq_args[@]} == 1)); then
		case $cmd in
		list|alter|info|delete|gc) _mq_reply "$(_mq_topics)" "$cur" ;;
		upgrade)
			# The topics of format 1: those left to upgrade.
			local t l=
			for t in $(_mq_topics); do
				grep -qx 'format=2' "$_mq_spool/topics/$t/topic.conf" \
				    2>/dev/null || l+=$t$'\n'
			done
			_mq_reply "$l" "$cur" ;;
		key) _mq_reply $'add\nlist\nremove' "$cur" ;;
		esac
	elif [[ $cmd == key ]] && ((${#_mq_args[@]} == 2)); then
		_mq_reply "$(_mq_topics)" "$cur"
	elif [[ $cmd == key && ${_mq_args[1]} == remove ]] &&
	    ((${#_mq_args[@]} == 3)) && [[ -f $_mq_spool/topics/${_mq_args[2]}/keys ]]; then
		_mq_reply "$(grep -v '^#' "$_mq_spool/topics/${_mq_args[2]}/keys")" "$cur"
	fi
}

_mq_group()
{
	local cur prev
	_mq_cur_prev
	_mq_parse "-s -t --session --lease --max-attempts --filter --match --from-offset --from-time"
	case $prev in
	-s)
		_mq_dirs "$cur"
		return ;;
	-t)
		_mq_reply "$(_mq_topics)" "$cur"
		return ;;
	--session|--lease|--max-attempts|--filter|--match|--from-offset|--from-time)
		return ;;
	esac
	local cmd=${_mq_args[0]} n=${#_mq_args[@]}
	# Options may come before or after the command (getopt_long permutes).
	if [[ $cur == -* ]]; then
		case $cmd in
		'')     _mq_reply $'-s\n--help' "$cur" ;;
		list)   _mq_reply $'-s\n--json' "$cur" ;;
		info)   _mq_reply $'-s\n-t\n--json' "$cur" ;;
		create) _mq_reply $'-s\n--exist-ok\n--ordered\n--session\n--lease\n--max-attempts\n--exactly-once\n--filter\n--match\n--from-start\n--from-offset\n--from-time' "$cur" ;;
		delete) _mq_reply $'-s' "$cur" ;;
		esac
	elif [[ -z $cmd ]]; then
		_mq_reply $'list\ninfo\ncreate\ndelete' "$cur"
	elif ((n == 1)); then
		case $cmd in
		info) _mq_reply "$(_mq_groups)" "$cur" ;;
		*)    _mq_reply "$(_mq_topics)" "$cur" ;;
		esac
	elif ((n == 2)) && [[ $cmd == delete ]]; then
		_mq_reply "$(_mq_groups "${_mq_args[1]}")" "$cur"
	fi
}

_mq_stat()
{
	local cur prev
	_mq_cur_prev
	_mq_parse "-F -n -o -s --watch --warn --crit --message"
	case $prev in
	-s)
		_mq_dirs "$cur"
		return ;;
	--warn|--crit)
		# A figure, after a scope "TOPIC:" or "TOPIC/GROUP:" if one
		# is typed (then a group's); the operator and number are the
		# user's.
		local scope= f figs=
		local -a all=(pending inflight delayed dlq age lease-age
		    consumers ack-rate latency-p50 latency-p90 latency-p99
		    latency-max)
		if [[ $cur == *:* ]]; then
			scope=${cur%%:*}:
			[[ $scope == */* ]] || all+=(publish-rate)
		else
			all+=(publish-rate)
			all+=(stale-tmp free-bytes free-inodes lag lag-seconds)
		fi
		for f in "${all[@]}"; do
			figs+=$scope$f$'\n'
		done
		_mq_reply "$figs" "$cur"
		compopt -o nospace 2>/dev/null
		return ;;
	-o)
		local IFS=$'\n'
		compopt -o filenames 2>/dev/null
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--watch|--message|-F|-n)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		_mq_reply $'-0\n-F\n-n\n-o\n-s\n--json\n--prometheus\n--watch\n--check\n--warn\n--crit\n--message\n--peek\n--help' "$cur"
	elif ((${#_mq_args[@]} == 0)); then
		_mq_reply "$(_mq_topics)" "$cur"
	elif ((${#_mq_args[@]} == 1)); then
		_mq_reply "$(_mq_groups "${_mq_args[0]}")" "$cur"
	fi
}

# _mq_dead TOPIC [GROUP]: ids of the dead letters of GROUP, or of every
# group, in TOPIC.
_mq_dead()
{
	local f g=${2:-*}
	[[ -n $1 ]] || return
	# Group names hold no pattern characters; g is left unquoted so that
	# '*' matches every group.
	for f in "$_mq_spool/topics/$1"/p*/dlq/$g/*; do
		[[ -f $f && $f != *.why ]] || continue
		f=${f##*/}
		f=${f#*.}
		printf '%s\n' "${f%%,*}"
	done | sort -u
}

_mq_dlq()
{
	local cur prev
	_mq_cur_prev
	_mq_parse "-g -s --older-than --max --rate --to"
	case $prev in
	-s)
		_mq_dirs "$cur"
		return ;;
	-g)
		_mq_reply "$(_mq_groups "${_mq_args[1]}")" "$cur"
		return ;;
	--to)
		_mq_reply "$(_mq_topics)" "$cur"
		return ;;
	--older-than|--max|--rate)
		return ;;
	esac
	local cmd=${_mq_args[0]} n=${#_mq_args[@]}
	if [[ $cur == -* ]]; then
		case $cmd in
		list)    _mq_reply $'-g\n-s\n--json' "$cur" ;;
		redrive) _mq_reply $'-g\n-q\n-s\n--older-than\n--max\n--rate\n--to' "$cur" ;;
		purge)   _mq_reply $'-g\n-q\n-s\n--all\n--older-than\n--max' "$cur" ;;
		*)       _mq_reply $'-g\n-s\n--help' "$cur" ;;
		esac
	elif [[ -z $cmd ]]; then
		_mq_reply $'list\ncount\nshow\nredrive\npurge\nexport\nimport' "$cur"
	elif [[ $cmd == import ]]; then
		((n == 1)) && { compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); }
	elif ((n == 1)); then
		_mq_reply "$(_mq_topics)" "$cur"
	else
		case $cmd in
		show)          ((n == 2)) && _mq_reply "$(_mq_dead "${_mq_args[1]}" "$_mq_group")" "$cur" ;;
		redrive|purge) _mq_reply "$(_mq_dead "${_mq_args[1]}" "$_mq_group")" "$cur" ;;
		export)        ((n == 2)) && { compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); } ;;
		esac
	fi
}

_mq_replicate()
{
	local cur prev
	_mq_cur_prev
	_mq_parse "-s --name --listen --retry --rsh --remote-spool --remote-command --max-sessions --handshake-timeout"
	case $prev in
	-s)
		_mq_dirs "$cur"
		return ;;
	--rsh)
		local IFS=$'\n'
		COMPREPLY=($(compgen -P "$_mq_pre" -c -- "$cur"))
		return ;;
	--name|--listen|--retry|--remote-spool|--remote-command|--max-sessions|--handshake-timeout)
		return ;;
	esac
	local cmd=${_mq_args[0]} n=${#_mq_args[@]} w
	# Options may come before or after the command (getopt_long permutes).
	if [[ $cur == -* ]]; then
		case $cmd in
		serve)  _mq_reply $'-s\n-v\n--listen\n--stdio\n--inetd\n--syslog\n--max-sessions\n--handshake-timeout' "$cur" ;;
		push|pull) _mq_reply $'-s\n-v\n--follow\n--retry\n--progress\n--no-progress\n--syslog\n--rsh\n--remote-spool\n--remote-command' "$cur" ;;
		demote) _mq_reply $'-s\n-v\n--progress\n--no-progress\n--syslog\n--rsh\n--remote-spool\n--remote-command' "$cur" ;;
		status) _mq_reply $'-s\n--json' "$cur" ;;
		keygen) _mq_reply $'-s\n--force\n--name' "$cur" ;;
		'')     _mq_reply $'-s\n--help' "$cur" ;;
		*)      _mq_reply $'-s' "$cur" ;;
		esac
	elif [[ -z $cmd ]]; then
		_mq_reply $'serve\npush\npull\nstatus\npromote\ndemote\nkeygen\npubkey\nauthorize\nrevoke\nforget' "$cur"
	elif [[ $cmd == forget ]] && ((n == 1)); then
		_mq_reply "$(_mq_peers)" "$cur"
	elif [[ $cmd == revoke ]] && ((n == 1)); then
		_mq_reply "$(_mq_authorized)" "$cur"
	elif [[ $cmd == push || $cmd == pull || $cmd == demote ]] && ((n == 1)); then
		# ADDR:PORT, unless --rsh names the peer: offer host names.
		for w in "${COMP_WORDS[@]}"; do
			[[ $w == --rsh || $w == --rsh=* ]] && return
		done
		local IFS=$'\n'
		COMPREPLY=($(compgen -A hostname -- "$cur"))
	fi
	# authorize PUBKEY [NAME]: nothing to offer.
}

complete -F _mq_pub mq-pub
complete -F _mq_sub mq-sub
complete -F _mq_ack mq-ack
complete -F _mq_topic mq-topic
complete -F _mq_dlq mq-dlq
complete -F _mq_group mq-group
complete -F _mq_replicate mq-replicate
complete -F _mq_stat mq-stat
complete -F _mq_req mq-req
complete -F _mq_http mq-http
