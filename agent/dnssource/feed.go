package dnssource

import (
	"context"
	"strings"
	"time"

	"github.com/cairndns/cairn/cache"
	"github.com/cairndns/cairn/internal/clock"
	"github.com/cairndns/cairn/rpc"
)

// The caches follow each datacenter's changes through one stream
// (rpc.MethodCatalogFeed) that a server of the agent's datacenter keeps
// open and writes to as changes commit: one frame per change per agent,
// where a blocking call asked again after each change cost a new stream,
// a request and a goroutine on the server every time.

// feedHeartbeat is how long a server lets an agent's feed stay quiet: it
// sends a reply with no news after that. A server that is feedGrace late
// with one is taken for hung (stopped, or cut off), as one that misses a
// ping is for a call (agent/door): the stream goes, and the next one starts
// on another server.
const (
	feedHeartbeat = 3 * time.Second
	feedGrace     = 2 * time.Second
)

// feedReopen is how long a feed stream stays with its server: then it is
// started again through the door, which picks its server anew once in a
// while (door.Config.RebalanceEvery), so that agents that all moved to one
// server while another was down spread out again.
const feedReopen = time.Minute

// follow is the caches' Feed: it follows dc's changes, told as which keys
// they touch.
func (s *Source) follow(dc string) cache.Follower {
	return &feedFollower{src: s, dc: dc}
}

// feedFollower is one datacenter's feed stream, and where it stands.
// The hub calls Next one call at a time and Stop after the last, so it
// needs no lock.
type feedFollower struct {
	src    *Source
	dc     string
	st     rpc.Stream // nil until started, and after a failure
	at     uint64     // the index st's next reply follows
	opened time.Time
}

// Next returns st's next reply that says something: a change, or a reset.
// Replies with no news (heartbeats) are passed over until wait has gone,
// when one is returned. A call whose minIndex is not where the stream
// stands (the first, or one after a failure: 0) starts a new stream from
// minIndex.
//
// A stream that breaks by its server (unreachable, hung, stopping) is
// started again at once from where it stood, on another server if the
// door picks one, within this call: the hub sees no failure, so it does
// not start over from 0. Starting over would take the whole state of
// whichever server answers, and a server that has just restarted holds
// only its last snapshot until it catches up with the leader; asked from
// an index it has not reached, it waits until it has (consensus/changes.go).
func (f *feedFollower) Next(ctx context.Context, minIndex uint64, wait time.Duration) (uint64, func(cache.Key) bool, bool, error) {
	if f.st != nil && (minIndex == 0 || minIndex != f.at || time.Since(f.opened) > feedReopen) {
		f.Stop()
	}
	if f.st == nil {
		f.at = minIndex
	}
	quietUntil := time.Now().Add(wait)
	pause := feedResumeMin
	for {
		if f.st == nil {
			args := &rpc.ChangesRequest{QueryOptions: readOptions(f.dc, f.at, feedHeartbeat)}
			st, err := f.src.door.Stream(ctx, rpc.MethodCatalogFeed, args)
			if err != nil {
				return 0, nil, false, err
			}
			f.st, f.opened = st, time.Now()
		}
		var reply rpc.ChangesResponse
		rctx, cancel := context.WithTimeout(ctx, feedHeartbeat+feedGrace)
		err := f.st.Recv(rctx, &reply)
		cancel()
		if err != nil {
			f.Stop()
			if !rpc.Classify(err).Elsewhere() || ctx.Err() != nil {
				return 0, nil, false, err
			}
			if !clock.Sleep(ctx, pause) {
				return 0, nil, false, err
			}
			pause = min(2*pause, feedResumeMax)
			continue // from f.at, where the broken stream stood
		}
		f.at = reply.Index
		c := reply.Changes
		if minIndex != 0 && !c.Reset && reply.Index == minIndex && time.Now().Before(quietUntil) {
			continue // a heartbeat
		}
		return c.Index, f.src.changedKeys(c.Services, c.Nodes, c.Queries), c.Reset, nil
	}
}

// feedResumeMin and feedResumeMax bound the pause before a broken feed
// stream is started again, doubling while it keeps breaking.
const (
	feedResumeMin = 50 * time.Millisecond
	feedResumeMax = time.Second
)

// Stop ends the stream, if one is open.
func (f *feedFollower) Stop() {
	if f.st != nil {
		_ = f.st.Close()
		f.st = nil
	}
}

// changedKeys returns which cache keys the named changes touch. Names in
// keys are lowercased (by zones, and here for HTTP ?cached reads that keep
// the path's case), as the change log's are.
func (s *Source) changedKeys(svcs, nodeNames, queryNames []string) func(cache.Key) bool {
	services, nodes, queries := setOf(svcs), setOf(nodeNames), setOf(queryNames)
	return func(k cache.Key) bool {
		switch k.Kind {
		case kindService:
			return services[strings.ToLower(k.Name)]
		case kindNode:
			return nodes[strings.ToLower(k.Name)]
		case kindQuery:
			if queries[strings.ToLower(k.Name)] {
				return true
			}
			e, ok := s.queries.Peek(k)
			return ok && e.Value != nil && services[strings.ToLower(e.Value.Service)]
		}
		return true
	}
}

func setOf(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
