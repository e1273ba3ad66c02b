#!/usr/bin/env bash
# Two datacenters on one machine: dc1 and dc2, each with three servers and
# one client agent, every agent on its own loopback address (dc1:
# 127.0.0.31–34, dc2: 127.0.0.41–44 unless ADDRS says otherwise). The
# servers of both join one WAN pool. It registers "web" on dc2's client only,
# asks dc1's client for web.service.dc2.cluster, defines a prepared query on
# dc1 that fails over to dc2 and digs it before and after web appears in
# dc1, prints the WAN members and the datacenters, and stops every agent
# (unless KEEP=1).
#
# SECURE=1 runs the same with everything docs/operating/security.md
# sets up: a gossip key (cairn keygen), a CA and a certificate per agent
# naming its address (cairn tls ... -additional-ipaddress) with mutual TLS
# and verified server names on the server port, the HTTP API over HTTPS
# only (on HTTP_PORT; the CLI trusts the CA through CAIRN_CACERT), and ACLs
# denying by default, bootstrapped through an initial management token,
# DNS answering with acl.tokens.dns while the anonymous token reads nothing.
# It shows an anonymous registration being refused, and an anonymous
# catalog read seeing no service.
#
#   examples/two-dc/run.sh                # builds cairn with go build
#   CAIRN=/path/to/cairn examples/two-dc/run.sh
#
# Environment: CAIRN (binary; default: build one), ADDRS (the agents'
# addresses in the order dc1-s1 dc1-s2 dc1-s3 dc1-c1 dc2-s1 dc2-s2 dc2-s3
# dc2-c1, default 127.0.0.31–34 then 127.0.0.41–44), DNS_PORT, HTTP_PORT,
# SERVER_PORT, SERF_LAN_PORT, SERF_WAN_PORT (every agent's ports, default
# 8600, 8500, 8300, 8301, 8302; see ../lib.sh), WORK (data and logs, default
# a temporary directory, removed at the end unless KEEP=1), TIMEOUT (seconds
# to wait for each step, default 60), SECURE (1: see above). Needs dig (bind9-dnsutils). Exits
# non-zero, printing the agents' logs, when a step fails.
set -euo pipefail

ADDRS=${ADDRS:-127.0.0.31 127.0.0.32 127.0.0.33 127.0.0.34 127.0.0.41 127.0.0.42 127.0.0.43 127.0.0.44}
TIMEOUT=${TIMEOUT:-60}
KEEP=${KEEP:-0}
here=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d -t cairn-two-dc.XXXXXX)}
mkdir -p "$WORK"

if [[ -z "${CAIRN:-}" ]]; then
	CAIRN="$WORK/cairn"
	echo "building cairn into $CAIRN"
	(cd "$here/../.." && go build -o "$CAIRN" ./cmd/cairn)
fi
command -v dig >/dev/null || { echo "dig not found: install bind9-dnsutils" >&2; exit 1; }

declare -A dc # agent name → datacenter
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$here/../lib.sh"

agents=()
for d in dc1 dc2; do
	for name in "$d-s1" "$d-s2" "$d-s3" "$d-c1"; do
		agents+=("$name")
		dc[$name]=$d
	done
done
assign_addrs "${agents[@]}"

SECURE=${SECURE:-0}
declare -A conf=() # agent name → its config file, with SECURE=1
if [[ "$SECURE" == 1 ]]; then
	# One gossip key for every agent of both datacenters; one CA; one
	# management token, which every agent also writes its own node with
	# (a shortcut of this demo: in production give each agent a token with
	# node "<its name>" write and service_prefix "" read); one DNS token,
	# made in each datacenter with the same secret once the servers run.
	key=$("$CAIRN" keygen)
	mkdir -p "$WORK/tls"
	(cd "$WORK/tls" && "$CAIRN" tls ca create >/dev/null)
	mgmt=$(cat /proc/sys/kernel/random/uuid)
	dnstok=$(cat /proc/sys/kernel/random/uuid)
	export CAIRN_HTTP_TOKEN=$mgmt
	declare -A issued=()
	for name in "${agents[@]}"; do
		d=${dc[$name]} role=client extra=""
		if [[ $name == *-s* ]]; then
			role=server
			extra="initial_management = \"$mgmt\""
		fi
		n=${issued[$d-$role]:-0}
		issued[$d-$role]=$((n + 1))
		# The CLI reaches the agent at its address over HTTPS: the
		# certificate must name it.
		(cd "$WORK/tls" && "$CAIRN" tls cert create "-$role" -dc "$d" -additional-ipaddress "${ip[$name]}" >/dev/null)
		conf[$name]="$WORK/$name.hcl"
		# Client certificates are required on the server port only:
		# HTTPS (the CLI, browsers, DNS over HTTPS) needs the CA alone.
		cat >"${conf[$name]}" <<-EOF
			encrypt = "$key"
			acl {
			  enabled = true
			  default_policy = "deny"
			  tokens { agent = "$mgmt" dns = "$dnstok" $extra }
			}
			tls {
			  defaults {
			    ca_file = "$WORK/tls/cairn-agent-ca.pem"
			    cert_file = "$WORK/tls/$d-$role-cairn-$n.pem"
			    key_file = "$WORK/tls/$d-$role-cairn-$n-key.pem"
			    verify_outgoing = true
			  }
			  internal_rpc {
			    verify_incoming = true
			    verify_server_hostname = true
			  }
			}
		EOF
	done
	# ports { http = -1  https = HTTP_PORT } through the flags lib.sh gives.
	HTTPS_ONLY=1
	export CAIRN_CACERT="$WORK/tls/cairn-agent-ca.pem"
fi

# start <name> [flags...]: an agent of dc[name] joining its DC's first
# server over LAN gossip.
start() {
	local name=$1
	shift
	local d=${dc[$name]}
	local secure=()
	if [[ -n "${conf[$name]:-}" ]]; then
		secure=(-config-file "${conf[$name]}")
	fi
	start_agent "$name" -datacenter "$d" -retry-join "$(lan_addr "$d-s1")" -retry-interval 1s "${secure[@]}" "$@"
}

# Every server joins the WAN pool through dc1's first server.
for d in dc1 dc2; do
	for i in 1 2 3; do
		start "$d-s$i" -server -bootstrap-expect 3 -retry-join-wan "$(wan_addr dc1-s1)"
	done
	start "$d-c1"
done

for d in dc1 dc2; do
	has_leader() { cli "$d-c1" operator raft list-peers | grep -q leader; }
	until_ok "a Raft leader in $d" has_leader
done
if [[ "$SECURE" == 1 ]]; then
	# DNS asks with acl.tokens.dns: it reads services, nodes and prepared
	# queries, in each datacenter (ACLs are per datacenter: a question
	# for dc2 is asked there with the same secret).
	rules=$'service_prefix "" { policy = "read" }\nnode_prefix "" { policy = "read" }\nquery_prefix "" { policy = "read" }'
	for d in dc1 dc2; do
		until_ok "a DNS read policy in $d" cli "$d-c1" acl policy create -name dns-read -rules "$rules"
		until_ok "the DNS token in $d" \
			cli "$d-c1" acl token create -description DNS -policy-name dns-read -secret "$dnstok"
	done
	if CAIRN_HTTP_TOKEN='' cli dc1-c1 services register -name intruder -port 1 >"$WORK/refused.txt" 2>&1; then
		echo "an anonymous registration was accepted" >&2
		exit 1
	fi
	echo
	echo "== an anonymous registration on dc1-c1 (refused)"
	cat "$WORK/refused.txt"
fi
wan_members() { [[ $(cli dc1-s1 members -wan -status alive | tail -n +2 | wc -l) -eq 6 ]]; }
until_ok "six alive WAN members seen from dc1-s1" wan_members

until_ok "registering web on dc2-c1" cli dc2-c1 services register -name web -port 8080
answered_in_dc1() {
	dig_at dc1-c1 +short +time=1 +tries=1 web.service.dc2.cluster SRV | grep -q dc2-c1.node.dc2.cluster
}
until_ok "web.service.dc2 answered by dc1's client" answered_in_dc1
if [[ "$SECURE" == 1 ]] && CAIRN_HTTP_TOKEN='' cli dc2-c1 catalog services | grep -q web; then
	echo "an anonymous catalog read listed web" >&2
	exit 1
fi

echo
echo "== cairn members -wan (from dc1-s1)"
cli dc1-s1 members -wan
echo
echo "== cairn catalog datacenters (from dc1-c1)"
cli dc1-c1 catalog datacenters
echo
echo "== dig @${ip[dc1-c1]} -p $DNS_PORT web.service.dc2.cluster SRV   (asked in dc1)"
dig_at dc1-c1 +noall +answer +additional web.service.dc2.cluster SRV
echo
echo "== dig @${ip[dc1-c1]} -p $DNS_PORT web.service.cluster SRV   (dc1 has no web)"
dig_at dc1-c1 +noall +comments web.service.cluster SRV | grep status

# A prepared query on dc1 that fails over to dc2: web is only in dc2, so
# dc1 answers from there; once dc1 has a web of its own, dc1 answers.
cli dc1-c1 query create -name web -service web -failover-dc dc2 >/dev/null
query_answers() { # query_answers <target suffix>
	dig_at dc1-c1 +short +time=1 +tries=1 web.query.cluster SRV | grep -q "$1"
}
until_ok "web.query answered from dc2" query_answers dc2-c1.node.dc2.cluster
echo
echo "== dig @${ip[dc1-c1]} -p $DNS_PORT web.query.cluster SRV   (dc1 has no web: failover to dc2)"
dig_at dc1-c1 +noall +answer web.query.cluster SRV
until_ok "registering web on dc1-c1" cli dc1-c1 services register -name web -port 8081
until_ok "web.query answered from dc1" query_answers dc1-c1.node.dc1.cluster
echo
echo "== dig @${ip[dc1-c1]} -p $DNS_PORT web.query.cluster SRV   (dc1 has web now)"
dig_at dc1-c1 +noall +answer web.query.cluster SRV

keep_running
echo
echo "stopping the agents"
stop_all
echo "all agents stopped cleanly"
