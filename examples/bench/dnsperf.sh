#!/usr/bin/env bash
# Measures cairn's DNS throughput beside the reference server in
# ../shared/tools/dnsref, both pinned the same way (server on CPU 0 with
# GOMAXPROCS=1, dnsperf on CPU 1), with the same services and query file.
#
#   examples/bench/dnsperf.sh [seconds]     # needs dnsperf (apt-get install dnsperf)
#
# cairn holds the reference zone's services as instances with their own
# addresses on the agent's node (one node per instance needs the catalog
# register endpoint, which comes later), so its SRV targets are .addr. names.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-20}
ref=${DNSREF:-../shared/tools/dnsref}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/cairn" ./cmd/cairn
(cd "$ref" && go build -o "$work/dnsref" .)

GOMAXPROCS=1 taskset -c 0 "$work/dnsref" -addr 127.0.0.1:18653 -zone "$ref/zone.db" &
GOMAXPROCS=1 taskset -c 0 "$work/cairn" agent -dev -node bench -dns-port 18600 -http-port 18500 -log-level warn &

http=http://127.0.0.1:18500
for i in $(seq 1 30); do curl -sf "$http/v1/status/leader" >/dev/null && break; sleep 0.2; done
reg() { curl -sf -X PUT "$http/v1/agent/service/register" -d "$1" >/dev/null; }
for i in 1 2 3; do reg "{\"ID\":\"web-$i\",\"Name\":\"web\",\"Port\":8080,\"Address\":\"127.0.1.$i\"}"; done
for i in $(seq 1 10); do reg "{\"ID\":\"api-$i\",\"Name\":\"api\",\"Port\":9090,\"Address\":\"127.0.2.$i\"}"; done
reg '{"ID":"db-1","Name":"db","Port":5432,"Address":"127.0.3.1"}'

run() {
	taskset -c 1 dnsperf -s 127.0.0.1 -p "$2" -d "$ref/queries.txt" -l "$secs" -c 4 -q 200 2>&1 |
		awk -v name="$1" '/Queries per second/ {qps=$4} /Average Latency/ {lat=$4} /Queries lost/ {lost=$3}
			END {printf "%-7s %10.0f qps  avg latency %s s  lost %s\n", name, qps, lat, lost}'
}
run dnsref 18653
run cairn 18600
