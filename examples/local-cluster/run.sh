#!/usr/bin/env bash
# A whole cairn cluster on one machine: three servers and two client agents,
# each on its own loopback address (127.0.0.21–25 unless ADDRS says
# otherwise) and its own data dir. It waits for a leader, registers "web" on
# the first client, digs it from the second, prints the members and the Raft
# peers, and stops every agent (unless KEEP=1, which keeps them until Ctrl-C).
#
#   examples/local-cluster/run.sh                # builds cairn with go build
#   CAIRN=/path/to/cairn examples/local-cluster/run.sh
#
# Environment: CAIRN (binary; default: build one), ADDRS (the agents'
# addresses in the order s1 s2 s3 c1 c2, default "127.0.0.21 127.0.0.22
# 127.0.0.23 127.0.0.24 127.0.0.25"), DNS_PORT, HTTP_PORT, SERVER_PORT,
# SERF_LAN_PORT, SERF_WAN_PORT (every agent's ports, default 8600, 8500, 8300,
# 8301, 8302; see ../lib.sh), WORK (data and logs, default a temporary
# directory, removed at the end unless KEEP=1), TIMEOUT (seconds to wait for
# each step, default 60). Needs dig (bind9-dnsutils). Exits non-zero,
# printing the agents' logs, when a step fails.
set -euo pipefail

ADDRS=${ADDRS:-127.0.0.21 127.0.0.22 127.0.0.23 127.0.0.24 127.0.0.25}
TIMEOUT=${TIMEOUT:-60}
KEEP=${KEEP:-0}
here=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d -t cairn-local-cluster.XXXXXX)}
mkdir -p "$WORK"

if [[ -z "${CAIRN:-}" ]]; then
	CAIRN="$WORK/cairn"
	echo "building cairn into $CAIRN"
	(cd "$here/../.." && go build -o "$CAIRN" ./cmd/cairn)
fi
command -v dig >/dev/null || { echo "dig not found: install bind9-dnsutils" >&2; exit 1; }

# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$here/../lib.sh"

servers=(s1 s2 s3)
clients=(c1 c2)
assign_addrs "${servers[@]}" "${clients[@]}"
join=$(lan_addr s1) # every agent joins through the first server's gossip port

for name in "${servers[@]}"; do
	start_agent "$name" -server -bootstrap-expect 3 -retry-join "$join" -retry-interval 1s
done
for name in "${clients[@]}"; do
	start_agent "$name" -retry-join "$join" -retry-interval 1s
done

has_leader() { cli c2 operator raft list-peers | grep -q leader; }
until_ok "a Raft leader seen from client c2" has_leader

all_members() { [[ $(cli c1 members -status alive | tail -n +2 | wc -l) -eq 5 ]]; }
until_ok "five alive members seen from client c1" all_members

until_ok "registering web on c1" cli c1 services register -name web -port 8080 -tag v1
answered() {
	dig_at c2 +short +time=1 +tries=1 web.service.dc1.cluster SRV | grep -q 'c1.node.dc1.cluster'
}
until_ok "web answered by c2's DNS" answered

echo
echo "== cairn members (from c2)"
cli c2 members
echo
echo "== cairn operator raft list-peers (from c2)"
cli c2 operator raft list-peers
echo
echo "== dig @${ip[c2]} -p $DNS_PORT web.service.dc1.cluster SRV"
dig_at c2 +noall +answer +additional web.service.dc1.cluster SRV

keep_running
echo
echo "stopping the agents"
stop_all
echo "all agents stopped cleanly"
