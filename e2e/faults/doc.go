// Package faults is cairn's fault suite (issue 15: keep writing through
// every single fault). It has no code of its own: its tests run real
// "cairn agent" processes, break the cluster under write load, heal it,
// and check the history.
//
// # Running it
//
//	CAIRN_E2E=1 go test ./e2e/faults/ -v
//
// It needs root, ip (iproute2) and iptables (apt-get install iproute2
// iptables), and takes about five minutes on two cores. Without
// CAIRN_E2E=1 only the checker's own tests run (on made-up histories);
// with it, a machine that lacks any of the above fails the suite.
// CAIRN_FAULT_TARGETS=1 turns the availability targets below into
// assertions (they are always printed). CAIRN_FAULTS_BIN=/path/to/cairn
// runs a binary built elsewhere instead of building ./cmd/cairn (another
// commit's, say). One scenario: -run 'TestFaults/partition-leader'.
//
// # The lab
//
// Every scenario gets a fresh cluster of three servers (s1–s3) and two
// clients (c1, c2), each agent in a network namespace of its own, joined
// by veth pairs to a bridge in a hub namespace; the test process reaches
// them through a veth of its own. Addresses are 10.200.N.0/24 with N
// picked per run, names carry the test's PID and a random suffix, and
// everything is deleted at the end (a later run deletes what a killed run
// left). Partitions are iptables DROP rules inside a namespace, or its
// eth0 set down; a hung server is SIGSTOP/SIGCONT; a crash is kill -9 and
// a restart on the same data directory. Which server a client uses is read
// from its namespace's TCP table (/proc/PID/net/tcp: its connections to
// port 8300).
//
// # The workload and the checks
//
// While a scenario runs, three writers per client register, through that
// client's HTTP API, (a) a value under one of 16 keys: PUT
// /v1/catalog/register of service "kv" instance k<n> on the external node
// kv-node with Meta {"v": "w<writer>-<seq>"} (every value unique), (b) a
// unique instance of service "u", and deregister some of those, and (c) an
// instance of service "a" with PUT /v1/agent/service/register. Two readers
// per client read "kv" and "u" with GET /v1/catalog/service/<name>
// ?consistent. Each operation is recorded with its start and end: a 200
// is ok, a 4xx failed, a 5xx or a timeout unknown. A prober asks each
// client's DNS for stable.service.cluster (registered and cached before the
// fault) every 50 ms.
//
// After the fault is healed and the cluster has settled (one leader named
// by every agent, three Raft peers, every agent alive in gossip), the
// checker reads the final state with ?consistent and fails the test when:
// an acknowledged write is missing from it unless a later acknowledged
// write superseded it (or an acknowledged deregistration is undone); a
// value or member no write explains shows up; a value that a read saw
// later disappears with no write to explain it; the register history
// (acknowledged writes, unknown writes some read saw, every ?consistent
// read) is not linearizable, by porcupine; a server's own state does not
// come to match the leader's; the DNS prober saw any error (timeout,
// SERVFAIL, NXDOMAIN, no answer); no write was committed inside a batch
// entry (group commit; the servers' cairn_raft_batched_writes_total), so
// that the checks cover batched writes. Agent registrations answered "stored on
// this agent and not yet in the catalog" that anti-entropy never pushed
// are reported, not asserted. A failed scenario keeps the agents' logs,
// the history (history.jsonl) and porcupine's visualization in a
// temporary directory and says where.
//
// Per scenario it prints, and sums up in a table at the end: the longest
// time without a successful write through each client (the unavailability
// window), the slowest write, operations by outcome, the HTTP statuses
// seen (a 500 says nothing of a write's fate: each is counted as a
// finding), DNS errors, how long Raft and gossip took to be whole again,
// and the verdicts.
//
// # The scenarios
//
//   - kill9-leader: kill -9 the leader, restart it 5 s later. Target:
//     writes through every client resume within 3 s.
//   - kill9-follower: kill -9 a follower, restart it 5 s later.
//   - kill9-client-server: kill -9 the server a client uses (a follower if
//     a client uses one), restart it 5 s later. Target: that client's
//     writes resume within 3 s.
//   - partition-leader: iptables cut the leader off from every other agent
//     for 8 s. Targets: a client on a follower (its writes are forwarded)
//     has its writes in flight finish, and a new one succeed, within 1 s
//     of the new leader being named; a client on the old leader resumes
//     within 3 s.
//   - isolate-client-server: set eth0 of the server a client uses down
//     for 8 s. Target: that client's writes resume within 3 s.
//   - loss10-leader: drop 10% of the packets between the leader and the
//     other agents, both ways, for 10 s.
//   - sigstop-client-server: SIGSTOP the server a client uses for 10 s,
//     then SIGCONT. Target: that client's writes resume within 3 s.
//   - sigstop5-client-server: SIGSTOP the server a client uses for 5 s,
//     inside the client's 7 s hold, then SIGCONT: what the stopped server
//     held must not take effect after the client's answer. An unknown
//     write answered 503 "may or may not have been applied" counts as
//     done settleBound (2 s) after the answer, in every scenario; one
//     without an answer (a timeout) may take effect at any time.
//   - all-servers-down: kill -9 all three servers, restart them 6 s later;
//     the clients must keep answering the cached name.
//   - blocking-read-leader-change: blocking reads (wait 10 s) of a KV key
//     nobody writes, through every client and follower, with kill -9 of
//     the leader a third into the wait (restarted when they end). Each
//     must answer 200 at the current index within its wait + 1/16 + 3 s
//     (issue 28: a second full wait on the new leader, a 503 or a 500).
//   - full-disk: SIGTERM a follower and restart it with its data dir
//     copied onto a 48 MiB tmpfs; fill the tmpfs under write load. The
//     follower must report cairn_raft_storage_healthy 0 within 30 s; after
//     10 s the space is freed, and it must report 1 again within 30 s,
//     without a restart, and catch up.
//   - clock-skew: c1 runs 5 s behind and c2 5 s ahead from their start,
//     and a follower is restarted 5 s ahead (CAIRN_TEST_CLOCK_OFFSET, the
//     agent's test-only clock offset: libfaketime does not reach Go
//     binaries). Every client must resolve names not in its cache (so
//     asked of a server), have writes and reads acknowledged while the
//     clocks are off, autopilot (asked on the leader) must judge every
//     server healthy, and the leader's health report and members list
//     must show the follower's clock about 5 s ahead (ClockSkew). With
//     deadlines sent as absolute times (issue 28, finding 5), the
//     servers refused c1's every request as late: the cluster never
//     settles.
//   - rolling-restart: SIGTERM each server in turn, restart it, wait until
//     the cluster has settled, go on to the next.
//   - partition-leader-restart-all: cut the leader off from every other
//     agent for 6 s under the write load, and send it writes of its own
//     (service "suffix", outside the checks) that it can never replicate;
//     heal, wait until it has cleared that suffix of its log, then restart
//     every server in turn as rolling-restart does. Every server must come
//     back: raft-wal v0.4.0 could not read a log whose tail was cleared
//     (issue 28). A server still running 20 s after SIGTERM fails the
//     scenario; SIGQUIT first writes its goroutines to its log.
//   - kill9-leader-snapshot and kill9-leader-truncation: the servers run
//     with raft_snapshot_threshold 256, raft_snapshot_interval 100ms,
//     raft_trailing_logs 64 and 1 MiB log segments, and a bulk writer
//     gives the leader 16 MiB of state (64 KV values of 256 KiB under
//     bulk/, outside the checks), so that it snapshots every second or
//     two, a snapshot takes tens to hundreds of milliseconds to write,
//     and the compaction after it deletes whole segments. The first kills
//     -9 the leader once a snapshot of its is part written (its <id>.tmp
//     directory holds state); the second once it has logged "compacting
//     logs" (raft-wal then commits its new metadata and deletes the
//     obsolete segments), at the first segment deleted (inotify). The
//     marks say where the kill landed: how much state the unfinished
//     snapshot held; whether raft-wal's metadata (read from wal-meta.db
//     after the kill) had the truncation, and how many of the segments
//     it removes were gone. The leader is restarted 2 s later, then every
//     server in turn as in rolling-restart; each must come back, and the
//     leader must have removed its unfinished snapshot (Raft keeps it for
//     ever and warns of it at every snapshot).
//
// # Lock safety
//
// TestLockSafety (locks_test.go, about 30 s, after the scenarios) starts
// three servers and three clients, and on each client a loop of "cairn
// lock" on one prefix (-lock-delay 5s, -monitor-retries 1) whose child
// appends "<section> <unix nanos>" heartbeats to one shared file every
// ~15 ms for 2.5 s. It kills -9 the agent of the holder just after its
// section began, then the Raft leader while the lock is held, and fails
// when two critical sections (the first to the last heartbeat of one run)
// overlap, when the killed holder's "cairn lock" did not report the lost
// lock and stop its child early, or when fewer than two sections follow
// each fault.
package faults
