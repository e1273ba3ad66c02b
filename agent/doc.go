// Package agent runs one cairn agent: it builds every component from a
// Config, starts them in order (catalog and Raft, the agent's own node
// registration, local state, HTTP API, DNS), and shuts them down in the
// reverse order. Run blocks until its context ends.
package agent
