// Package e2e holds the end-to-end tests of the cairn binary. It has no
// code of its own: its tests build cmd/cairn once, run "cairn agent" as a
// process on free loopback ports, drive it with the cairn CLI and query it
// with the real dig, as a user following the tour would.
//
// The DNS tests need dig (Debian: apt-get install bind9-dnsutils). Without
// it they are skipped, unless CAIRN_E2E=1 is set, which makes a missing dig
// a failure; CI sets it.
package e2e
