// Package consulsuite runs Consul's own test suite of its Go client
// (github.com/hashicorp/consul/api and api/watch, the version go.mod pins)
// against cairn. Those tests start their servers through Consul's
// sdk/testutil, which runs the consul binary found on PATH; consulshim
// stands in for it and starts cairn agents. api-tests.txt names every test
// of the suite: out of scope (and why), or its result against cairn (pass,
// or fail and why). The test here runs the in-scope ones and fails when
// one listed as passing fails; it reports those that newly pass.
//
// It has no code of its own: the harness is its test, the shim a command.
package consulsuite
