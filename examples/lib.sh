# shellcheck shell=bash
# Shared by the example scripts (sourced, not run): where the agents listen,
# starting and stopping them, cleaning up on exit, waiting for a condition,
# and running a CLI command or dig against one agent.
#
# The script sets WORK, KEEP, TIMEOUT and ADDRS before sourcing it; CAIRN is
# the binary. It declares the associative arrays ip (agent name → address,
# set by assign_addrs) and pid (agent name → process ID, set by
# start_agent).
#
# Every agent has a loopback address of its own (ADDRS, a space-separated
# list of IPv4 addresses, one per agent in the order the script gives) and
# the same ports as the others, taken from the environment:
#
#   DNS_PORT       DNS, UDP and TCP; default 8600
#   HTTP_PORT      HTTP API; default 8500
#   SERVER_PORT    server RPC and Raft; default 8300
#   SERF_LAN_PORT  LAN gossip, UDP and TCP; default 8301
#   SERF_WAN_PORT  WAN gossip of a server, UDP and TCP; default 8302
#
# The defaults are the agent's own. Change them (and ADDRS) to run beside
# another cairn or Consul holding them, or beside another run of the same
# script: the end-to-end tests pass free ones.
#
# With HTTPS_ONLY=1 (set by the script) the agents serve their API over
# HTTPS only, on HTTP_PORT (-http-port -1 -https-port HTTP_PORT; the
# script gives them their certificates), and cli reaches them at
# https://, trusting the CA named by CAIRN_CACERT.

declare -A ip=() pid=()

DNS_PORT=${DNS_PORT:-8600}
HTTP_PORT=${HTTP_PORT:-8500}
SERVER_PORT=${SERVER_PORT:-8300}
SERF_LAN_PORT=${SERF_LAN_PORT:-8301}
SERF_WAN_PORT=${SERF_WAN_PORT:-8302}
HTTPS_ONLY=${HTTPS_ONLY:-0}

# assign_addrs <name>...: gives the agents the addresses of ADDRS in order
# (ip[name]); exits when ADDRS does not hold one address per agent.
assign_addrs() {
	local -a list
	read -ra list <<<"$ADDRS"
	if ((${#list[@]} != $#)); then
		echo "ADDRS holds ${#list[@]} addresses, want $#, one for each of: $*" >&2
		exit 2
	fi
	local i=0 name
	for name in "$@"; do
		ip[$name]=${list[i]}
		i=$((i + 1))
	done
}

# start_agent <name> [flags...]: starts "cairn agent" in the background as
# node <name> on ip[name] and the ports above, its data in WORK/<name> and
# its output in WORK/<name>.log, and records its process ID in pid[name].
start_agent() {
	local name=$1
	shift
	local http=(-http-port "$HTTP_PORT")
	if [[ "$HTTPS_ONLY" == 1 ]]; then
		http=(-http-port -1 -https-port "$HTTP_PORT")
	fi
	"$CAIRN" agent -node "$name" -bind "${ip[$name]}" -client "${ip[$name]}" \
		-dns-port "$DNS_PORT" "${http[@]}" -server-port "$SERVER_PORT" \
		-serf-lan-port "$SERF_LAN_PORT" -serf-wan-port "$SERF_WAN_PORT" \
		-data-dir "$WORK/$name" "$@" >"$WORK/$name.log" 2>&1 &
	pid[$name]=$!
	echo "started $name on ${ip[$name]} (pid ${pid[$name]})"
}

# lan_addr <name>, wan_addr <name>: the agent's LAN and WAN gossip
# addresses, for -retry-join and -retry-join-wan.
lan_addr() { echo "${ip[$1]}:$SERF_LAN_PORT"; }
wan_addr() { echo "${ip[$1]}:$SERF_WAN_PORT"; }

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
			[[ -e "$f" ]] || continue
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
# HTTP API (HTTPS with HTTPS_ONLY=1).
cli() {
	local name=$1
	shift
	local scheme=http
	if [[ "$HTTPS_ONLY" == 1 ]]; then
		scheme=https
	fi
	"$CAIRN" "$@" -http-addr "$scheme://${ip[$name]}:$HTTP_PORT"
}

# dig_at <agent> <dig arguments...>: asks the agent's DNS server.
dig_at() {
	local name=$1
	shift
	dig @"${ip[$name]}" -p "$DNS_PORT" "$@"
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
