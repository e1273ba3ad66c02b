// Package e2e holds the end-to-end tests of the cairn binary. It has no
// code of its own: its tests build cmd/cairn once, run "cairn agent" as a
// process on free loopback ports, drive it with the cairn CLI and query it
// with real DNS clients, as a user following the tour would: dig, Unbound
// and dnsmasq loaded with the configurations in examples/stub-zones, and
// glibc (through getent) in a network namespace whose resolver is an agent
// on port 53.
//
// They need dig (Debian: apt-get install bind9-dnsutils), unbound,
// dnsmasq-base, and root and ip (iproute2) for the namespace. A test whose
// client is missing is skipped, unless CAIRN_E2E=1 is set, which makes it a
// failure; CI sets it.
package e2e
