# Shared by the example scripts (sourced, not run): stopping the agents a
# script started, cleaning up on exit, waiting for a condition, and running
# a CLI command against one agent. The script sets WORK, KEEP and TIMEOUT
# and declares the associative arrays pid (agent name → process ID) and ip
# (agent name → address) before sourcing it; CAIRN is the binary.

# stop_all sends SIGTERM to every agent and waits for each, printing the log
# of any that exits with an error; it fails if one did.
stop_all() {
	local code=0
	for name in "${!pid[@]}"; do
		kill -TERM "${pid[$name]}" 2>/dev/null || true
	done
	for name in "${!pid[@]}"; do
		if ! wait "${pid[$name]}"; then
			echo "agent $name exited with an error; its log:" >&2
			sed 's/^/  /' "$WORK/$name.log" >&2
			code=1
		fi
	done
	pid=()
	return $code
}

# cleanup runs on exit: stops the agents, prints the logs' tails when
# something failed, and removes WORK unless KEEP=1 (or KEEP_WORK is set).
cleanup() {
	local code=$?
	stop_all || code=1
	if [[ $code -ne 0 ]]; then
		for f in "$WORK"/*.log; do
			echo "--- $f" >&2
			tail -n 40 "$f" >&2
		done
	fi
	if [[ "$KEEP" != 1 && -z "${KEEP_WORK:-}" ]]; then
		rm -rf "$WORK"
	fi
	exit $code
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# until_ok <what> <command...>: waits until the command succeeds, for at
# most TIMEOUT seconds.
until_ok() {
	local what=$1
	shift
	local deadline=$((SECONDS + TIMEOUT))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			echo "timed out after ${TIMEOUT}s waiting for: $what" >&2
			return 1
		fi
		sleep 0.2
	done
}

# cli <agent> <cairn command...>: runs a CLI command against the agent's
# HTTP API.
cli() {
	local name=$1
	shift
	"$CAIRN" "$@" -http-addr "${ip[$name]}:8500"
}

# keep_running waits for Ctrl-C when KEEP=1, leaving the agents up.
keep_running() {
	[[ "$KEEP" == 1 ]] || return 0
	echo
	echo "the agents keep running (data and logs in $WORK); Ctrl-C stops them"
	while true; do
		sleep 3600 &
		wait $!
	done
}
