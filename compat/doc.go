// Package compat holds cairn's compatibility tests: real agents, started
// in-process, driven through Consul's own Go client
// (github.com/hashicorp/consul/api) and through raw HTTP, to show that the
// tools that speak Consul's HTTP API work against cairn unchanged. It has
// no code of its own; Consul's client is imported by its tests only.
package compat
