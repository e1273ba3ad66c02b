#!/usr/bin/env bash
# Measures cairn's DNS throughput, latency and CPU per answered query beside
# the reference server in ../shared/tools/dnsref (miekg/dns) and the C name
# servers Knot DNS and NSD, all pinned the same way (server on CPU 0 — Go
# servers with GOMAXPROCS=1, Knot with one UDP worker, NSD with one server
# process — dnsperf on CPU 1), with the same zone and query file.
#
#   examples/bench/dnsperf.sh [seconds] [rounds]
#
# Needs dnsperf, dig, curl, knotd and nsd:
#   apt-get install dnsperf bind9-dnsutils curl knot nsd
# with a policy-rc.d that denies every service start (as .ci/run installs
# unbound), or Knot and NSD take port 53 as services:
#   printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
# SERVERS="dnsref cairn" measures some of them only (default: all four).
#
# CORES=2 gives each server both CPUs (GOMAXPROCS=2, two Knot UDP workers,
# two NSD server processes, taskset -c 0-1) and leaves dnsperf unpinned,
# sharing them: on a 2-core machine that is how a server using every core
# is measured (default CORES=1).
#
# Peak: rounds × one dnsperf run per server at full speed (-c 4 -q 200),
# interleaved, the order turned by one every round so no server always goes
# first; each round prints every server's queries/s, its CPU use during its
# run (about 100% × CORES means the server, not dnsperf, was the limit), its
# CPU per answered query and the ratios of cairn's figures to each other
# server's; then the medians. CPU per answered query is the server's user +
# system time over the run (from /proc/PID/stat: the server process, every
# live process below it, and the children it has reaped) divided by the
# queries dnsperf completed, in µs.
# Latency: each server again for [seconds] at each of LEVELS % of its own
# median peak (dnsperf -Q), with dnsperf -v, which prints every answer's
# latency; the percentiles are taken from those lines (dnsperf 2.10 prints
# only the mean and standard deviation itself). The GCs column counts a Go
# server's garbage collections during the run (GODEBUG=gctrace=1; "-" for
# the C servers).
#
# CAIRN=path uses a cairn binary already built instead of building one;
# DNSREF=dir points at the reference server's sources; LOAD="-c 16 -q 1000"
# changes dnsperf's clients and outstanding queries (default -c 4 -q 200);
# LEVELS="25 50 75" are the loads of the latency runs, in % of peak. At the
# end, the handler's allocations per cached question (go test -bench).
#
# cairn holds the reference zone's services as instances with their own
# addresses on the agent's node (one node per instance needs the catalog
# register endpoint), so its SRV targets are .addr. names; Knot and NSD
# serve the zone file itself and add its NS record (authority) and the
# targets' addresses (additional): the response sizes printed show what
# each sends.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-20}
rounds=${2:-3}
ref=${DNSREF:-../shared/tools/dnsref}
# Every server serves that directory's zone.db and is asked its queries.txt.
[[ -f $ref/zone.db && -f $ref/queries.txt ]] || { echo "no zone.db and queries.txt in $ref: set DNSREF to the reference server's directory" >&2; exit 2; }
ref=$(cd "$ref" && pwd)
read -ra perfargs <<<"${LOAD:--c 4 -q 200}"
read -ra levels <<<"${LEVELS:-25 50 75}"
read -ra servers <<<"${SERVERS:-dnsref cairn knot nsd}"
cores=${CORES:-1}
servercpus=0
perfcpus=1
if ((cores > 1)); then
	servercpus=0-$((cores - 1))
	perfcpus=0-$(($(nproc) - 1))
fi
declare -A port=([dnsref]=18653 [cairn]=18600 [knot]=18654 [nsd]=18655) pid=()
for s in "${servers[@]}"; do
	[[ -n ${port[$s]:-} ]] || { echo "SERVERS: unknown server $s (known: ${!port[*]})" >&2; exit 2; }
done
has() { [[ " ${servers[*]} " == *" $1 "* ]]; }
for tool in dnsperf dig curl; do
	command -v $tool >/dev/null || { echo "$tool is missing: apt-get install dnsperf bind9-dnsutils curl" >&2; exit 2; }
done
if has knot && ! command -v knotd >/dev/null; then echo "knotd is missing: apt-get install knot (see the top of $0)" >&2; exit 2; fi
if has nsd && ! command -v nsd >/dev/null; then echo "nsd is missing: apt-get install nsd (see the top of $0)" >&2; exit 2; fi
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

# GODEBUG=gctrace=1 on the Go servers: one line per GC in their logs, so
# the GCs during each run are counted.
if has dnsref; then
	(cd "$ref" && go build -o "$work/dnsref" .)
	GODEBUG=gctrace=1 GOMAXPROCS=$cores taskset -c "$servercpus" "$work/dnsref" -addr 127.0.0.1:"${port[dnsref]}" -zone "$ref/zone.db" 2>"$work/dnsref.log" &
	pid[dnsref]=$!
fi
if has cairn; then
	if [[ -n ${CAIRN:-} ]]; then
		cp "$CAIRN" "$work/cairn"
	else
		go build -o "$work/cairn" ./cmd/cairn
	fi
	# rrl off: dnsperf is one address asking 100,000 times a second, the very
	# flood response-rate limiting (on by default) truncates.
	echo 'dns_config { rrl { enabled = false } }' >"$work/bench.hcl"
	GODEBUG=gctrace=1 GOMAXPROCS=$cores taskset -c "$servercpus" "$work/cairn" agent -dev -node bench -dns-port "${port[cairn]}" -http-port 18500 -config-file "$work/bench.hcl" -log-level warn 2>"$work/cairn.log" &
	pid[cairn]=$!
fi
if has knot; then
	# Knot has no response-rate limiting unless its rrl module is loaded.
	mkdir -p "$work/knot"
	cat >"$work/knot.conf" <<-EOF
		server:
		    rundir: "$work/knot"
		    listen: 127.0.0.1@${port[knot]}
		    udp-workers: $cores
		    tcp-workers: 1
		    background-workers: 1
		database:
		    storage: "$work/knot"
		log:
		  - target: stderr
		    any: warning
		template:
		  - id: default
		    storage: "$work/knot"
		    zonefile-sync: -1
		    zonefile-load: whole
		    journal-content: none
		zone:
		  - domain: cluster
		    file: "$ref/zone.db"
	EOF
	taskset -c "$servercpus" knotd -c "$work/knot.conf" 2>"$work/knot.log" &
	pid[knot]=$!
fi
if has nsd; then
	# rrl-ratelimit 0: NSD's response-rate limiting (on by default) would
	# truncate dnsperf's flood from one address, as cairn's would.
	mkdir -p "$work/nsd"
	cat >"$work/nsd.conf" <<-EOF
		server:
		    ip-address: 127.0.0.1@${port[nsd]}
		    server-count: $cores
		    username: ""
		    chroot: ""
		    database: ""
		    zonelistfile: "$work/nsd/zone.list"
		    xfrdfile: "$work/nsd/xfrd.state"
		    xfrdir: "$work/nsd"
		    pidfile: "$work/nsd/nsd.pid"
		    logfile: "$work/nsd.log"
		    verbosity: 0
		    rrl-ratelimit: 0
		remote-control:
		    control-enable: no
		zone:
		    name: cluster
		    zonefile: "$ref/zone.db"
	EOF
	taskset -c "$servercpus" nsd -d -c "$work/nsd.conf" 2>>"$work/nsd.log" &
	pid[nsd]=$!
fi

if has cairn; then
	http=http://127.0.0.1:18500
	for i in $(seq 1 50); do curl -sf "$http/v1/status/leader" | grep -q : && break; sleep 0.2; done
	reg() { curl -sf -X PUT "$http/v1/agent/service/register" -d "$1" >/dev/null; }
	for i in 1 2 3; do reg "{\"ID\":\"web-$i\",\"Name\":\"web\",\"Port\":8080,\"Address\":\"127.0.1.$i\"}"; done
	for i in $(seq 1 10); do reg "{\"ID\":\"api-$i\",\"Name\":\"api\",\"Port\":9090,\"Address\":\"127.0.2.$i\"}"; done
	reg '{"ID":"db-1","Name":"db","Port":5432,"Address":"127.0.3.1"}'
fi
for s in "${servers[@]}"; do
	n=0
	for i in $(seq 1 50); do
		n=$(dig +short +tries=1 +time=1 -p "${port[$s]}" @127.0.0.1 api.service.dc1.cluster SRV | wc -l)
		[[ $n == 10 ]] && break
		sleep 0.2
	done
	[[ $n == 10 ]] || { echo "$s (port ${port[$s]}) answers $n SRV records for api, want 10; its log:" >&2; cat "$work/$s.log" >&2; exit 1; }
done

# tree PID prints PID and every live process below it.
tree() {
	local c
	echo "$1"
	# shellcheck disable=SC2013 # the files hold space-separated PIDs
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do tree "$c"; done
}
# cpu PID prints the CPU time (user + system, in clock ticks) used by PID,
# every live process below it and the children it has reaped. Fields are
# counted from the command name's closing parenthesis: the name may hold
# spaces.
cpu() {
	local p sum=0 t
	for p in $(tree "$1"); do
		t=$(awk -v root=$((p == $1)) '{sub(/^.*\) /, ""); print $12 + $13 + root * ($14 + $15)}' "/proc/$p/stat" 2>/dev/null) || t=0
		sum=$((sum + ${t:-0}))
	done
	echo "$sum"
}
hz=$(getconf CLK_TCK)

# gcs NAME prints how many GCs the server NAME has logged.
gcs() { grep -c '^gc [0-9]' "$work/$1.log" || true; }
isgo() { [[ $1 == dnsref || $1 == cairn ]]; }

# perf NAME SECS [dnsperf flags…] runs dnsperf against server NAME and sets
# qps, completed (queries answered), lost, rsize, busy (the server's CPU use
# during the run, in %), us (its CPU per completed query, in µs) and gc
# (its GCs during the run, "-" for a C server); dnsperf's output stays in
# $work/NAME.out.
perf() {
	local name=$1 s=$2 c0 c1 g0 out=$work/$1.out
	shift 2
	c0=$(cpu "${pid[$name]}")
	g0=$(gcs "$name")
	taskset -c "$perfcpus" dnsperf -s 127.0.0.1 -p "${port[$name]}" -d "$ref/queries.txt" -l "$s" "$@" >"$out" 2>&1
	c1=$(cpu "${pid[$name]}")
	gc=-
	if isgo "$name"; then gc=$(($(gcs "$name") - g0)); fi
	qps=$(awk '/Queries per second/ {print $4}' "$out")
	completed=$(awk '/Queries completed/ {print $3}' "$out")
	lost=$(awk '/Queries lost/ {print $3, $4}' "$out")
	rsize=$(awk '/Average packet size/ {print $NF}' "$out")
	busy=$(awk -v d=$((c1 - c0)) -v hz="$hz" -v s="$s" 'BEGIN {printf "%.0f", 100 * d / hz / s}')
	us=$(awk -v d=$((c1 - c0)) -v hz="$hz" -v n="${completed:-0}" 'BEGIN {printf "%.2f", (n > 0) ? 1e6 * d / hz / n : 0}')
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# Warm up every server (cairn's cache fills on the first questions; none counts).
for s in "${servers[@]}"; do perf "$s" 2 "${perfargs[@]}"; done

echo "peak: $rounds rounds × $secs s per server on $cores core(s), dnsperf ${perfargs[*]}, queries $ref/queries.txt ($(awk '{print "load average", $1, $2, $3}' /proc/loadavg))"
printf "%-6s %-7s %10s %7s %9s %5s %8s %14s\n" round server qps "cpu%" "µs/query" GCs "resp B" lost
for s in "${servers[@]}"; do : >"$work/$s.qps"; : >"$work/$s.us"; : >"$work/$s.qpsratio"; : >"$work/$s.usratio"; done
n=${#servers[@]}
for r in $(seq 1 "$rounds"); do
	k=$(((r - 1) % n))
	order=("${servers[@]:k}" "${servers[@]:0:k}")
	for s in "${order[@]}"; do
		perf "$s" "$secs" "${perfargs[@]}"
		printf "%-6s %-7s %10.0f %7s %9s %5s %8s %14s\n" "$r" "$s" "$qps" "$busy" "$us" "$gc" "$rsize" "$lost"
		echo "$qps" >>"$work/$s.qps"
		echo "$us" >>"$work/$s.us"
	done
	if has cairn; then
		for s in "${servers[@]}"; do
			[[ $s == cairn ]] && continue
			awk -v a="$(tail -1 "$work/cairn.qps")" -v b="$(tail -1 "$work/$s.qps")" 'BEGIN {printf "%.3f\n", a / b}' >>"$work/$s.qpsratio"
			awk -v a="$(tail -1 "$work/cairn.us")" -v b="$(tail -1 "$work/$s.us")" 'BEGIN {printf "%.3f\n", (b > 0) ? a / b : 0}' >>"$work/$s.usratio"
			printf "       cairn/%-6s qps %s  µs/query %s\n" "$s" "$(tail -1 "$work/$s.qpsratio")" "$(tail -1 "$work/$s.usratio")"
		done
	fi
done
declare -A peak=()
for s in "${servers[@]}"; do
	peak[$s]=$(median <"$work/$s.qps")
	printf "median %-7s qps %8.0f  µs/query %6.2f" "$s" "${peak[$s]}" "$(median <"$work/$s.us")"
	if has cairn && [[ $s != cairn ]]; then
		printf "   cairn/%s: qps %s (rounds %s), µs/query %s (rounds %s)" "$s" \
			"$(median <"$work/$s.qpsratio")" "$(paste -sd' ' "$work/$s.qpsratio")" \
			"$(median <"$work/$s.usratio")" "$(paste -sd' ' "$work/$s.usratio")"
	fi
	echo
done

# Latency at fractions of each server's own median peak.
echo
echo "latency at $(printf "%s%%, " "${levels[@]}" | sed "s/, $//") of peak: $secs s per server and level, dnsperf -Q <level × peak> ${perfargs[*]} -v; ms from every answer's line"
printf "%-7s %6s %8s %10s %7s %9s %5s %8s %8s %8s %8s %8s %8s %12s\n" server load "-Q" qps "cpu%" "µs/query" GCs p50 p90 p99 p99.9 max mean lost
for level in "${levels[@]}"; do
	for s in "${servers[@]}"; do
		q=$(awk -v p="${peak[$s]}" -v l="$level" 'BEGIN {printf "%d", p * l / 100}')
		perf "$s" "$secs" "${perfargs[@]}" -Q "$q" -v
		taskset -c "$perfcpus" awk '/^> / {print $NF}' "$work/$s.out" | taskset -c "$perfcpus" sort -g >"$work/$s.lat"
		pct=$(awk '{v[NR] = $1; sum += $1}
			function at(q,  i) { i = int(q * NR); if (i < q * NR) i++; if (i < 1) i = 1; return v[i] * 1000 }
			END {printf "%8.3f %8.3f %8.3f %8.3f %8.3f %8.3f", at(0.5), at(0.9), at(0.99), at(0.999), v[NR] * 1000, sum / NR * 1000}' "$work/$s.lat")
		printf "%-7s %5s%% %8s %10.0f %7s %9s %5s %s %12s\n" "$s" "$level" "$q" "$qps" "$busy" "$us" "$gc" "$pct" "$lost"
	done
done

if has cairn; then
	echo
	echo "allocations per cached question in the handler (go test -bench 'ServeDNS$' ./resolver):"
	go test -run '^$' -bench 'ServeDNS$' -benchmem ./resolver | awk '/^Benchmark/ {print "  " $1, $(NF-1), $NF}'
fi
