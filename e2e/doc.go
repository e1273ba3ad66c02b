// Package e2e holds the end-to-end tests of the cairn binary. It has no
// code of its own: its tests build cmd/cairn once, run "cairn agent" as a
// process on free loopback ports, drive it with the cairn CLI and query it
// with real DNS clients, as a user following the tour would: dig, Unbound
// and dnsmasq loaded with the configurations in examples/stub-zones, and
// glibc (through getent) in a network namespace whose resolver is an agent
// on port 53. TestNearestByRTT runs agents in namespaces of their own
// behind links of 5 and 50 ms (a UDP relay in the test, netem being
// unavailable) and checks that the network coordinates sort by them.
// TestConsulCLI drives a secured five-agent cluster with Consul's own CLI,
// built from its module source by consulcli/build-consul.sh (cached after
// the first build, which takes minutes), one table row per command.
//
// They need dig (Debian: apt-get install bind9-dnsutils), unbound,
// dnsmasq-base, and root, ip (iproute2) and iptables for the namespaces.
// A test whose client is missing is skipped, unless CAIRN_E2E=1 is set,
// which makes it a failure; CI sets it.
package e2e
