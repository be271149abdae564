# nobats.bash: what the harnesses' teardown (gl_down, mfs_down) uses of
# helper.bash, without bats: sourced by gluster-down and moosefs-down,
# which clean up after a run killed before its teardown_file.
proc_state() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null || true)
	s=${s##*) }
	echo "${s%% *}"
}
exited() {
	local st
	st=$(proc_state "$1")
	[[ -z $st || $st == Z ]]
}
wait_for() {
	local timeout=10 k
	if [[ $1 == -t ]]; then
		timeout=$2
		shift 2
	fi
	for ((k = 0; k < timeout * 10; k++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
load() { :; }
