#!/usr/bin/env bash
# Measures cairn's DNS throughput and latency beside the reference server in
# ../shared/tools/dnsref, both pinned the same way (server on CPU 0 with
# GOMAXPROCS=1, dnsperf on CPU 1), with the same services and query file.
#
#   examples/bench/dnsperf.sh [seconds] [rounds]   # needs dnsperf, dig, curl (apt-get install dnsperf bind9-dnsutils curl)
#
# CORES=2 gives each server both CPUs (GOMAXPROCS=2, taskset -c 0-1) and
# leaves dnsperf unpinned, sharing them: on a 2-core machine that is how a
# server using every core is measured (default CORES=1: the server on CPU 0
# with GOMAXPROCS=1, dnsperf on CPU 1).
#
# Peak: rounds × (dnsref, cairn) runs of dnsperf at full speed (-c 4 -q 200),
# interleaved, the order swapped every round so neither server always goes
# first; each round prints both servers' queries/s, the server's CPU use
# during its run (about 100% means the server, not dnsperf, was the limit)
# and the ratio cairn/dnsref; then the median ratio.
# Latency: each server again for [seconds] at 50% and then 25% of its own
# median peak (dnsperf -Q), with dnsperf -v, which prints every answer's
# latency; the percentiles are taken from those lines (dnsperf 2.10 prints
# only the mean and standard deviation itself). The GCs column counts the
# server's garbage collections during the run (GODEBUG=gctrace=1).
#
# CAIRN=path uses a cairn binary already built instead of building one;
# DNSREF=dir points at the reference server's sources; LOAD="-c 16 -q 1000"
# changes dnsperf's clients and outstanding queries (default -c 4 -q 200);
# LEVELS="25 50 75" are the loads of the latency runs, in % of peak. At the
# end, the handler's allocations per cached question (go test -bench).
#
# cairn holds the reference zone's services as instances with their own
# addresses on the agent's node (one node per instance needs the catalog
# register endpoint, which comes later), so its SRV targets are .addr. names
# (the response sizes printed show what that changes).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-20}
rounds=${2:-3}
ref=${DNSREF:-../shared/tools/dnsref}
read -ra perfargs <<<"${LOAD:--c 4 -q 200}"
read -ra levels <<<"${LEVELS:-25 50 75}"
cores=${CORES:-1}
servercpus=0
perfcpus=1
if ((cores > 1)); then
	servercpus=0-$((cores - 1))
	perfcpus=0-$(($(nproc) - 1))
fi
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

if [[ -n ${CAIRN:-} ]]; then
	cp "$CAIRN" "$work/cairn"
else
	go build -o "$work/cairn" ./cmd/cairn
fi
(cd "$ref" && go build -o "$work/dnsref" .)

export GODEBUG=gctrace=1 # one line per GC in the logs: the GCs during each run are counted
GOMAXPROCS=$cores taskset -c "$servercpus" "$work/dnsref" -addr 127.0.0.1:18653 -zone "$ref/zone.db" 2>"$work/dnsref.log" &
refpid=$!
# rrl off: dnsperf is one address asking 100,000 times a second, the very
# flood response-rate limiting (on by default) truncates.
echo 'dns_config { rrl { enabled = false } }' >"$work/bench.hcl"
GOMAXPROCS=$cores taskset -c "$servercpus" "$work/cairn" agent -dev -node bench -dns-port 18600 -http-port 18500 -config-file "$work/bench.hcl" -log-level warn 2>"$work/cairn.log" &
cairnpid=$!

http=http://127.0.0.1:18500
for i in $(seq 1 50); do curl -sf "$http/v1/status/leader" | grep -q : && break; sleep 0.2; done
reg() { curl -sf -X PUT "$http/v1/agent/service/register" -d "$1" >/dev/null; }
for i in 1 2 3; do reg "{\"ID\":\"web-$i\",\"Name\":\"web\",\"Port\":8080,\"Address\":\"127.0.1.$i\"}"; done
for i in $(seq 1 10); do reg "{\"ID\":\"api-$i\",\"Name\":\"api\",\"Port\":9090,\"Address\":\"127.0.2.$i\"}"; done
reg '{"ID":"db-1","Name":"db","Port":5432,"Address":"127.0.3.1"}'
for port in 18653 18600; do
	n=$(dig +short -p $port @127.0.0.1 api.service.dc1.cluster SRV | wc -l)
	[[ $n == 10 ]] || { echo "server on port $port answers $n SRV records for api, want 10" >&2; exit 1; }
done

# cpu PID prints the CPU time PID has used, in clock ticks.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# gcs NAME prints how many GCs the server NAME has logged.
gcs() { grep -c '^gc [0-9]' "$work/$1.log" || true; }

# perf NAME PORT PID SECS [dnsperf flags…] runs dnsperf and sets qps, lost,
# rsize, busy (the server's CPU use during the run, in %) and gc (the
# server's GCs during the run); dnsperf's output stays in $work/NAME.out.
perf() {
	local name=$1 port=$2 pid=$3 s=$4 c0 c1 g0 out=$work/$1.out
	shift 4
	c0=$(cpu "$pid")
	g0=$(gcs "$name")
	taskset -c "$perfcpus" dnsperf -s 127.0.0.1 -p "$port" -d "$ref/queries.txt" -l "$s" "$@" >"$out" 2>&1
	c1=$(cpu "$pid")
	gc=$(($(gcs "$name") - g0))
	qps=$(awk '/Queries per second/ {print $4}' "$out")
	lost=$(awk '/Queries lost/ {print $3, $4}' "$out")
	rsize=$(awk '/Average packet size/ {print $NF}' "$out")
	busy=$(awk -v d=$((c1 - c0)) -v hz="$hz" -v s="$s" 'BEGIN {printf "%.0f", 100 * d / hz / s}')
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# Warm up both (cairn's cache fills on the first questions; neither counts).
perf dnsref 18653 $refpid 2 "${perfargs[@]}"
perf cairn 18600 $cairnpid 2 "${perfargs[@]}"

echo "peak: $rounds rounds × $secs s per server on $cores core(s), dnsperf ${perfargs[*]}, queries $ref/queries.txt"
printf "%-6s %-7s %10s %7s %5s %8s %14s\n" round server qps "cpu%" GCs "resp B" lost
: >"$work/ratios"
: >"$work/dnsref.qps"
: >"$work/cairn.qps"
for r in $(seq 1 "$rounds"); do
	order="dnsref cairn"
	((r % 2 == 0)) && order="cairn dnsref"
	for s in $order; do
		if [[ $s == dnsref ]]; then perf dnsref 18653 $refpid "$secs" "${perfargs[@]}"; else perf cairn 18600 $cairnpid "$secs" "${perfargs[@]}"; fi
		printf "%-6s %-7s %10.0f %7s %5s %8s %14s\n" "$r" "$s" "$qps" "$busy" "$gc" "$rsize" "$lost"
		echo "$qps" >>"$work/$s.qps"
	done
	a=$(tail -1 "$work/cairn.qps")
	b=$(tail -1 "$work/dnsref.qps")
	awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f\n", a / b}' | tee -a "$work/ratios" | sed "s/^/       ratio cairn\/dnsref /"
done
refpeak=$(median <"$work/dnsref.qps")
cairnpeak=$(median <"$work/cairn.qps")
printf "median qps: dnsref %.0f  cairn %.0f   median ratio cairn/dnsref %s (ratios: %s)\n" \
	"$refpeak" "$cairnpeak" "$(median <"$work/ratios")" "$(paste -sd' ' "$work/ratios")"

# Latency at fractions of each server's own median peak.
echo
echo "latency at $(printf "%s%%, " "${levels[@]}" | sed "s/, $//") of peak: $secs s per server and level, dnsperf -Q <level × peak> ${perfargs[*]} -v; ms from every answer's line"
printf "%-7s %6s %8s %10s %7s %5s %8s %8s %8s %8s %8s %8s %12s\n" server load "-Q" qps "cpu%" GCs p50 p90 p99 p99.9 max mean lost
for level in "${levels[@]}"; do
	for s in dnsref cairn; do
		if [[ $s == dnsref ]]; then
			q=$(awk -v p="$refpeak" -v l="$level" 'BEGIN {printf "%d", p * l / 100}')
			perf dnsref 18653 $refpid "$secs" "${perfargs[@]}" -Q "$q" -v
		else
			q=$(awk -v p="$cairnpeak" -v l="$level" 'BEGIN {printf "%d", p * l / 100}')
			perf cairn 18600 $cairnpid "$secs" "${perfargs[@]}" -Q "$q" -v
		fi
		taskset -c 1 awk '/^> / {print $NF}' "$work/$s.out" | taskset -c 1 sort -g >"$work/$s.lat"
		pct=$(awk '{v[NR] = $1; sum += $1}
			function at(q,  i) { i = int(q * NR); if (i < q * NR) i++; if (i < 1) i = 1; return v[i] * 1000 }
			END {printf "%8.3f %8.3f %8.3f %8.3f %8.3f %8.3f", at(0.5), at(0.9), at(0.99), at(0.999), v[NR] * 1000, sum / NR * 1000}' "$work/$s.lat")
		printf "%-7s %5s%% %8s %10.0f %7s %5s %s %12s\n" "$s" "$level" "$q" "$qps" "$busy" "$gc" "$pct" "$lost"
	done
done

echo
echo "allocations per cached question in the handler (go test -bench 'ServeDNS$' ./resolver):"
GODEBUG= go test -run '^$' -bench 'ServeDNS$' -benchmem ./resolver | awk '/^Benchmark/ {print "  " $1, $(NF-1), $NF}'
