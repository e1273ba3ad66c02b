#!/usr/bin/env bash
# Measures what DNSSEC signing costs cairn's DNS: one agent with signing
# on (dns_config.dnssec, a key made by the server), asked the same
# questions by dnsperf with EDNS0 and without the DO bit (answers as
# before, unsigned) and with it (signed: RRSIGs from the signature cache,
# denials as compact NSEC), in interleaved runs, the order swapped every
# round. The agent is pinned to CPU 0 with GOMAXPROCS=1 and dnsperf to
# CPU 1, as in dnsperf.sh.
#
#   examples/bench/dnssec.sh [seconds] [rounds]   # needs dnsperf, dig, curl
#
# Prints each run's queries/s, the agent's CPU use and the average reply
# size, then the median ratio signed/unsigned. CAIRN=path uses a built
# binary; QUERIES=file another query file (default: dnsperf.sh's, from
# ../shared/tools/dnsref, plus a name that does not exist, so the
# compact denials are measured too); LOAD changes dnsperf's -c/-q.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
rounds=${2:-3}
read -ra perfargs <<<"${LOAD:--c 4 -q 200}"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

if [[ -n ${CAIRN:-} ]]; then
	cp "$CAIRN" "$work/cairn"
else
	go build -o "$work/cairn" ./cmd/cairn
fi
queries=${QUERIES:-$work/queries.txt}
if [[ -z ${QUERIES:-} ]]; then
	cat ../shared/tools/dnsref/queries.txt >"$queries"
	echo "nope.service.dc1.cluster A" >>"$queries"
fi
# rrl off: dnsperf is one address asking 100,000 times a second, the very
# flood response-rate limiting (on by default) truncates.
cat >"$work/dnssec.hcl" <<'HCL'
dns_config {
  dnssec {
    enabled = true
    auto    = true
  }
  rrl { enabled = false }
}
HCL

GOMAXPROCS=1 taskset -c 0 "$work/cairn" agent -dev -node bench -dns-port 18600 -http-port 18500 -log-level warn \
	-config-file "$work/dnssec.hcl" 2>"$work/cairn.log" &
pid=$!
http=http://127.0.0.1:18500
for i in $(seq 1 50); do curl -sf "$http/v1/status/leader" | grep -q : && break; sleep 0.2; done
reg() { curl -sf -X PUT "$http/v1/agent/service/register" -d "$1" >/dev/null; }
for i in 1 2 3; do reg "{\"ID\":\"web-$i\",\"Name\":\"web\",\"Port\":8080,\"Address\":\"127.0.1.$i\"}"; done
for i in $(seq 1 10); do reg "{\"ID\":\"api-$i\",\"Name\":\"api\",\"Port\":9090,\"Address\":\"127.0.2.$i\"}"; done
reg '{"ID":"db-1","Name":"db","Port":5432,"Address":"127.0.3.1"}'
for i in $(seq 1 50); do
	dig +dnssec -p 18600 @127.0.0.1 api.service.dc1.cluster SRV | grep -q RRSIG && break
	sleep 0.2
done
dig +dnssec -p 18600 @127.0.0.1 api.service.dc1.cluster SRV | grep -q RRSIG || { echo "the agent does not sign" >&2; exit 1; }

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# perf NAME SECS [dnsperf flags…] sets qps, busy and rsize.
perf() {
	local name=$1 s=$2 c0 c1 out=$work/$1.out
	shift 2
	c0=$(cpu "$pid")
	taskset -c 1 dnsperf -s 127.0.0.1 -p 18600 -d "$queries" -l "$s" -e "$@" >"$out" 2>&1
	c1=$(cpu "$pid")
	qps=$(awk '/Queries per second/ {print $4}' "$out")
	rsize=$(awk '/Average packet size/ {print $NF}' "$out")
	busy=$(awk -v d=$((c1 - c0)) -v hz="$hz" -v s="$s" 'BEGIN {printf "%.0f", 100 * d / hz / s}')
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

perf unsigned 2 "${perfargs[@]}"
perf signed 2 "${perfargs[@]}" -D
echo "$rounds rounds × $secs s per mode, dnsperf -e ${perfargs[*]} [-D], queries $queries"
printf "%-6s %-9s %10s %7s %8s\n" round mode qps "cpu%" "resp B"
: >"$work/ratios"
for r in $(seq 1 "$rounds"); do
	order="unsigned signed"
	((r % 2 == 0)) && order="signed unsigned"
	for m in $order; do
		if [[ $m == signed ]]; then perf signed "$secs" "${perfargs[@]}" -D; else perf unsigned "$secs" "${perfargs[@]}"; fi
		printf "%-6s %-9s %10.0f %7s %8s\n" "$r" "$m" "$qps" "$busy" "$rsize"
		echo "$qps" >"$work/$m.last"
	done
	awk -v a="$(cat "$work/signed.last")" -v b="$(cat "$work/unsigned.last")" 'BEGIN {printf "%.3f\n", a / b}' |
		tee -a "$work/ratios" | sed "s/^/       ratio signed\/unsigned /"
done
echo "median ratio signed/unsigned $(median <"$work/ratios") (ratios: $(paste -sd' ' "$work/ratios"))"
