package gossip

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/hashicorp/memberlist"
)

// User events are opaque payloads gossiped to every member of the pool,
// each delivered once to Config.OnUserEvent (Consul's user events, which
// serf carries). A member rebroadcasts a payload the first time it sees
// it; the last seenEvents payloads are remembered by their hash, so that
// a copy arriving later is dropped.
//
// Wire format: msgUserEvent, the payload.
const (
	msgUserEvent = 5
	// MaxUserEventSize bounds a payload, so that it fits memberlist's
	// gossip packets with room for others.
	MaxUserEventSize = 1024
	seenEvents       = 1024
)

// ErrUserEventTooLarge is returned by UserEvent for a payload over
// MaxUserEventSize.
var ErrUserEventTooLarge = errors.New("user event too large")

type eventHash [sha256.Size]byte

// seenSet remembers the last seenEvents hashes. Guarded by Pool.mu.
type seenSet struct {
	set  map[eventHash]struct{}
	ring []eventHash
	next int
}

// add reports whether h is new, remembering it.
func (s *seenSet) add(h eventHash) bool {
	if s.set == nil {
		s.set = make(map[eventHash]struct{}, seenEvents)
		s.ring = make([]eventHash, 0, seenEvents)
	}
	if _, ok := s.set[h]; ok {
		return false
	}
	if len(s.ring) < seenEvents {
		s.ring = append(s.ring, h)
	} else {
		delete(s.set, s.ring[s.next])
		s.ring[s.next] = h
		s.next = (s.next + 1) % seenEvents
	}
	s.set[h] = struct{}{}
	return true
}

// eventBroadcast is one user event in the broadcast queue; it never
// invalidates another.
type eventBroadcast struct{ msg []byte }

var _ memberlist.Broadcast = (*eventBroadcast)(nil)

func (b *eventBroadcast) Invalidates(memberlist.Broadcast) bool { return false }
func (b *eventBroadcast) Message() []byte                       { return b.msg }
func (b *eventBroadcast) Finished()                             {}

// UserEvent gossips payload to every member of the pool, this one
// included: Config.OnUserEvent receives it once on each.
func (p *Pool) UserEvent(payload []byte) error {
	if len(payload) > MaxUserEventSize {
		return fmt.Errorf("gossip user event of %d bytes (at most %d): %w", len(payload), MaxUserEventSize, ErrUserEventTooLarge)
	}
	msg := append([]byte{msgUserEvent}, payload...)
	p.receiveUserEvent(msg)
	return nil
}

// receiveUserEvent handles a user event from memberlist's packet handler
// (or UserEvent): no blocking, no calls into memberlist.
func (p *Pool) receiveUserEvent(b []byte) {
	if len(b) < 2 || len(b)-1 > MaxUserEventSize {
		return
	}
	p.mu.Lock()
	fresh := p.seen.add(sha256.Sum256(b[1:]))
	p.mu.Unlock()
	if !fresh {
		return
	}
	p.broadcasts.QueueBroadcast(&eventBroadcast{msg: append([]byte(nil), b...)})
	if p.cfg.OnUserEvent != nil {
		p.cfg.OnUserEvent(append([]byte(nil), b[1:]...))
	}
}
