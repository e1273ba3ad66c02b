// Package gossip runs cairn's memberlist pools: the LAN pool, of which every
// agent of a datacenter is a member, and the WAN pool, of which the servers of
// every datacenter are members. It owns the member metadata each agent
// gossips (role, datacenter, RPC address, protocol version), its compact
// versioned encoding, the check that refuses peers of another datacenter or
// an incompatible protocol, the gossip keyring, and the membership snapshot
// (alive, failed, left) that the agent shows and the consensus leader
// reconciles into node health.
//
// gossip imports hashicorp/memberlist, hashicorp/serf's coordinate package
// and the standard library only: no other cairn package, and neither
// library has another home in cairn.
//
// Coordinates: each pool gives its member a Vivaldi network coordinate,
// carried in probe acks and updated from each probe's round trip, as serf
// does for Consul (coordinates.go); Coordinate and PeerCoordinates expose
// it as a plain Coordinate, so that no other package depends on serf.
//
// Left versus failed: memberlist does not tell its event delegate whether a
// member that went away left or failed, so Leave first gossips a leave
// intent (a memberlist user message, as serf does) and receivers combine it
// with memberlist's event in either order (intent.go).
//
// Keys: a pool started with a key encrypts and authenticates all its
// gossip. Its keyring (kept in Config.KeyringFile when set) rotates while
// it runs, with no member falling out: InstallKey, UseKey and RemoveKey
// reach every alive member and wait for each to show the change in the
// key fingerprints it gossips in its metadata; ListKeys reports them
// (keyring.go, keyring_ops.go).
//
// Reconnecting: memberlist never probes a member it declared failed, so
// after a partition heals each side would see the other failed until a
// lucky push/pull. Like serf, the pool tries every
// Timing.ReconnectInterval to join a random failed member again
// (reconnect.go).
//
// Logging: memberlist logs one line per bad packet it receives; the pool
// logs such lines at most once a minute per kind and source address and
// counts the rest (DroppedLogLines), so a flood cannot fill the log
// (logger.go).
//
// Concurrency contract. Pool methods are safe for concurrent use. memberlist
// calls the pool's delegates from its receive loop (events, holding its own
// node lock) and its packet handler (leave intents); they only decode,
// update the pool's member map under a short mutex, queue a rebroadcast and
// signal Changes without blocking, so a slow consumer never stalls failure
// detection. Consumers read a snapshot with Members after a signal:
//
//	changes := pool.Changes()
//	for {
//		reconcile(pool.Members())
//		select {
//		case <-ctx.Done():
//			return
//		case <-changes:
//		}
//	}
//
// Changes coalesces: many events between two reads give one signal, and the
// snapshot read after it reflects all of them. The pool starts one goroutine
// per Join call in flight, one per keyring operation sent and not yet
// delivered, one that applies the operations other members send, and one
// that tries to join failed members again (reconnect.go); it waits for all
// of them in Shutdown. memberlist's own goroutines end when
// Shutdown closes its transport.
package gossip
