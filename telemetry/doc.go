// Package telemetry owns an agent's metrics registry: one Prometheus
// registry holding what hashicorp/raft and hashicorp/memberlist emit
// through go-metrics (bridged by go-metrics' Prometheus sink), the Go
// runtime and process collectors, and the collectors the agent adds for
// cairn's own series. It renders the registry in the Prometheus text
// format and gathers it for the JSON summary of /v1/agent/metrics.
//
// It imports nothing of cairn's. The packages whose series it reports
// keep their own counters (atomics on the DNS hot path) and expose them as
// plain values; the agent turns those into collectors at scrape time, so
// nothing here sits on a hot path.
//
// go-metrics is process-wide: raft and memberlist write to its global
// sink. The first Registry made in a process installs that sink, and every
// Registry reports it; in production a process runs one agent, while tests
// that run several agents in one process see every agent's library series
// in each.
package telemetry
