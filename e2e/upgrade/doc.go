// Package upgrade is cairn's rolling-upgrade test (issue 31: every
// release talks to the previous one in both directions). It has no code
// of its own: TestRollingUpgrade builds the previous release from git,
// starts three servers and two clients on it as processes, each on a
// loopback address of its own (127.a.b.x, the same free ports on each),
// and rolls them to HEAD one at a time under a write load, servers first
// in one cluster and clients first in another, the two at once.
//
// # Running it
//
//	go test ./e2e/upgrade/ -v
//
// It needs git and the previous release's commit in the clone (a shallow
// clone lacks it: fetch with --unshallow, or check out with fetch-depth
// 0). Without them it is skipped, unless CAIRN_E2E=1 is set, which makes
// it a failure; CI sets it. -short skips it. The previous release is
// previousTag, or previousCommit where the clone has no tags; a
// temporary clone of it (sharing the repository's objects) is built with
// go build -buildvcs=true and the binary cached under the user cache
// directory (~/.cache/cairn/releases/<commit>/cairn), so only the first
// run pays for the build (about 1.5 minutes on two busy cores; the whole
// package then takes about 2). TestPreviousReleaseIsNewest fails when
// a newer release is tagged and the constants were not moved to it.
// CAIRN_UPGRADE_TO=/path/to/cairn upgrades to a binary built elsewhere
// instead of HEAD's (another branch's, or one made incompatible on
// purpose to see the test fail).
//
// # What each order checks
//
// Every agent writes for as long as the roll lasts, through its own HTTP
// API: unique KV keys (PUT /v1/kv/load/<agent>/<seq>), and instances of
// service "load" (PUT /v1/agent/service/register), of which it keeps 20,
// deregistering the oldest. Each write an agent acknowledges (200) is
// recorded. The servers are upgraded a follower first; the leadership
// is then moved to it (an old leader with a new follower, then a new
// leader with old followers); then the other two. Each step stops an
// agent with SIGTERM and starts HEAD's binary on its data dir with the
// same flags, and then:
//
//   - the cluster is whole: one leader named by every agent, three Raft
//     peers, every agent alive in every agent's gossip;
//   - every client's DNS answers, within 10 s, a new instance of
//     "watched" (a name cached since the first step, so only the change
//     feed can bring it), no longer answers the previous instance,
//     deregistered, and answers a name never asked before, registered
//     through an agent on the other release;
//   - a write through every agent, of each kind, is acknowledged again;
//   - every server's own state (read from it with ?stale) holds every KV
//     value acknowledged so far: a server that skips log entries its
//     release cannot read (v0.1.0's FSM returns an error for an unknown
//     command type, which Raft discards on a follower) diverges silently;
//   - for the next 10 s under load, every client's DNS, asked every 100
//     ms, answers the current "watched" instance and nothing else (a feed
//     that breaks only after a while shows here), and then the changes
//     above are made and checked again.
//
// Once all run HEAD, no agent reports the previous release's revision in
// /v1/agent/self or its gossiped build tag (and every one reports HEAD's,
// where HEAD's build has one: go build stamps none in a git worktree or
// with GOFLAGS=-buildvcs=false). Servers first also rolls a server back to
// the previous release and forward again while another server still runs
// the previous release (until every server runs HEAD the leader writes no
// batch entry, which the previous release cannot read), and at the end
// rolls a client back, with the same checks at each step. At the end every acknowledged KV value and
// registration is in the catalog (read with ?consistent) and in every
// server's own state, no acknowledged deregistration is undone, and no agent logged an RPC its peer does not
// know ("can't find method"). The ERROR lines of every agent are printed.
//
// # A peer outside the supported range
//
// TestIncompatiblePeerRefused starts a server on HEAD and an agent of
// HEAD's binary made to speak only cairn protocol 99
// (CAIRN_TEST_PROTOCOL, test-only) that joins it. It must be refused, not
// half served: no alive member, listed by the server as incompatible
// (status 5) with the reason in its "incompatible" tag, counted in
// cairn_gossip_incompatible_total, the refusal logged at ERROR on both
// sides naming both protocol versions, and no leader known to the peer.
package upgrade
