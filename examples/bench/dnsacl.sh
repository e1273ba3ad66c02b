#!/usr/bin/env bash
# Measures what ACLs cost DNS: two dev agents with the same services, one
# with ACLs off and one with ACLs on (deny by default, the anonymous token
# given a policy reading services and nodes, as docs/operating/security.md
# sets up), each pinned to CPU 0 with GOMAXPROCS=1, dnsperf on
# CPU 1 with the query file of ../shared/tools/dnsref. The servers resolve
# a policy when an answer is fetched, so the cached path should not differ.
#
#   examples/bench/dnsacl.sh [seconds] [rounds]   # needs dnsperf, dig, curl
#
# Prints each round's queries/s of both (interleaved, order swapped every
# round), the ratio acl/open, and the median ratio. CAIRN=path uses a built
# binary; DNSREF=dir points at the reference's query file; LOAD="-c 4 -q
# 200" sets dnsperf's clients and outstanding queries.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
rounds=${2:-3}
ref=${DNSREF:-../shared/tools/dnsref}
read -ra perfargs <<<"${LOAD:--c 4 -q 200}"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

if [[ -n ${CAIRN:-} ]]; then
	cp "$CAIRN" "$work/cairn"
else
	go build -o "$work/cairn" ./cmd/cairn
fi

mgmt=$(cat /proc/sys/kernel/random/uuid)
# rrl off on both: dnsperf is one address asking 100,000 times a second,
# the very flood response-rate limiting (on by default) truncates.
cat >"$work/acl.hcl" <<EOF
acl {
  enabled = true
  default_policy = "deny"
  tokens { initial_management = "$mgmt"  agent = "$mgmt" }
}
dns_config { rrl { enabled = false } }
EOF
echo 'dns_config { rrl { enabled = false } }' >"$work/open.hcl"
GOMAXPROCS=1 taskset -c 0 "$work/cairn" agent -dev -node open -dns-port 18600 -http-port 18500 -serf-lan-port 18301 -serf-wan-port 18302 -server-port 18300 -config-file "$work/open.hcl" -log-level warn 2>"$work/open.log" &
openpid=$!
GOMAXPROCS=1 taskset -c 0 "$work/cairn" agent -dev -node acl -bind 127.0.0.2 -client 127.0.0.2 -dns-port 18600 -http-port 18500 -serf-lan-port 18301 -serf-wan-port 18302 -server-port 18300 -config-file "$work/acl.hcl" -log-level warn 2>"$work/acl.log" &
aclpid=$!

declare -A addr=([open]=127.0.0.1 [acl]=127.0.0.2) pid=([open]=$openpid [acl]=$aclpid)
for name in open acl; do
	h=http://${addr[$name]}:18500
	for _ in $(seq 1 50); do curl -sf -H "X-Consul-Token: $mgmt" "$h/v1/status/leader" | grep -q : && break; sleep 0.2; done
	reg() { curl -sf -X PUT -H "X-Consul-Token: $mgmt" "$h/v1/agent/service/register" -d "$1" >/dev/null; }
	until reg '{"ID":"db-1","Name":"db","Port":5432,"Address":"127.0.3.1"}'; do sleep 0.2; done
	for i in 1 2 3; do reg "{\"ID\":\"web-$i\",\"Name\":\"web\",\"Port\":8080,\"Address\":\"127.0.1.$i\"}"; done
	for i in $(seq 1 10); do reg "{\"ID\":\"api-$i\",\"Name\":\"api\",\"Port\":9090,\"Address\":\"127.0.2.$i\"}"; done
done
h=http://127.0.0.2:18500
curl -sf -X PUT -H "X-Consul-Token: $mgmt" "$h/v1/acl/policy" \
	-d '{"Name":"dns-read","Rules":"service_prefix \"\" { policy = \"read\" }\nnode_prefix \"\" { policy = \"read\" }"}' >/dev/null
curl -sf -X PUT -H "X-Consul-Token: $mgmt" "$h/v1/acl/token/00000000-0000-0000-0000-000000000002" \
	-d '{"Policies":[{"Name":"dns-read"}]}' >/dev/null
for name in open acl; do
	for _ in $(seq 1 50); do
		n=$(dig +short -p 18600 @"${addr[$name]}" api.service.dc1.cluster SRV | wc -l)
		[[ $n == 10 ]] && break
		sleep 0.2
	done
	[[ $n == 10 ]] || { echo "$name answers $n SRV records for api, want 10" >&2; exit 1; }
done

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
perf() { # perf NAME SECS: sets qps and busy
	local name=$1 s=$2 c0 c1 out=$work/$1.out
	c0=$(cpu "${pid[$name]}")
	taskset -c 1 dnsperf -s "${addr[$name]}" -p 18600 -d "$ref/queries.txt" -l "$s" "${perfargs[@]}" >"$out" 2>&1
	c1=$(cpu "${pid[$name]}")
	qps=$(awk '/Queries per second/ {print $4}' "$out")
	busy=$(awk -v d=$((c1 - c0)) -v hz="$hz" -v s="$s" 'BEGIN {printf "%.0f", 100 * d / hz / s}')
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

perf open 2
perf acl 2
echo "DNS with ACLs off (open) and on (acl, anonymous may read): $rounds rounds × $secs s, dnsperf ${perfargs[*]}"
printf "%-6s %-5s %10s %6s\n" round agent qps "cpu%"
: >"$work/ratios"
for r in $(seq 1 "$rounds"); do
	order="open acl"
	((r % 2 == 0)) && order="acl open"
	for name in $order; do
		perf "$name" "$secs"
		printf "%-6s %-5s %10.0f %6s\n" "$r" "$name" "$qps" "$busy"
		echo "$qps" >"$work/$name.last"
	done
	awk -v a="$(cat "$work/acl.last")" -v b="$(cat "$work/open.last")" 'BEGIN {printf "%.3f\n", a / b}' | tee -a "$work/ratios" | sed 's/^/       ratio acl\/open /'
done
echo "median ratio acl/open $(median <"$work/ratios") (ratios: $(paste -sd' ' "$work/ratios"))"
