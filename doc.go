// Package cairn is a DNS-centric service discovery system: every machine runs
// one agent that answers DNS for registered services from local memory, and a
// few agents per datacenter run as servers holding the catalog under Raft.
//
// The code lives in the packages below this one; see README.md for the tour
// and docs/ for the rest, docs/architecture.md for the architecture. This
// package holds only repository-wide tests, such as the import rules.
package cairn
