package gossip

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/memberlist"
)

// A leave intent tells the other members that a member is leaving, so they
// record it as Left rather than Failed. memberlist itself knows the
// difference but does not tell its EventDelegate (see NotifyLeave), so Leave
// gossips an intent first, through memberlist's user-message broadcasts,
// as serf does. A receiver that already saw the member go upgrades it from
// Failed to Left; one that sees it go later finds the intent recorded.
// Receivers rebroadcast an intent the first time they see it.
// ForceLeave sends the same intent on a failed member's behalf; a prune
// intent makes every member forget the member at once.
//
// Wire format: msgLeaveIntent (or msgPruneIntent), one length byte, the
// member name. A member of an older release ignores a prune intent.
const (
	msgLeaveIntent = 1
	msgPruneIntent = 4
)

func encodeIntent(name string) []byte { return encodeIntentOf(msgLeaveIntent, name) }

func encodeIntentOf(kind byte, name string) []byte {
	b := make([]byte, 0, 2+len(name))
	b = append(b, kind, byte(len(name)))
	return append(b, name...)
}

// decodeIntent decodes a message from the network; ok is false for
// anything encodeIntent and encodeIntentOf cannot have produced.
func decodeIntent(b []byte) (name string, prune, ok bool) {
	if len(b) < 3 || b[0] != msgLeaveIntent && b[0] != msgPruneIntent || int(b[1]) != len(b)-2 {
		return "", false, false
	}
	return string(b[2:]), b[0] == msgPruneIntent, true
}

// intentBroadcast is one leave intent in the broadcast queue.
type intentBroadcast struct {
	name string
	msg  []byte
	done chan struct{} // closed when sent often enough (or superseded); may be nil
}

var _ memberlist.Broadcast = (*intentBroadcast)(nil)

func (b *intentBroadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(*intentBroadcast)
	return ok && o.name == b.name
}

func (b *intentBroadcast) Message() []byte { return b.msg }

func (b *intentBroadcast) Finished() {
	if b.done != nil {
		close(b.done)
	}
}

// receive handles a user message from memberlist's packet handler: no
// blocking, no calls into memberlist.
func (p *Pool) receive(b []byte) {
	name, prune, ok := decodeIntent(b)
	if !ok || name == p.name {
		return
	}
	p.mu.Lock()
	m, known := p.members[name]
	if !known { // only intents of known members are kept: bounded memory
		p.mu.Unlock()
		return
	}
	_, seen := p.intents[name]
	changed := p.recordIntent(name, m, prune)
	p.mu.Unlock()
	if !seen || prune && changed {
		p.broadcasts.QueueBroadcast(&intentBroadcast{name: name, msg: append([]byte(nil), b...)})
	}
	if changed {
		p.signal()
	}
}

// recordIntent records a leave intent for the known member m: a failed
// member turns Left, or with prune (unless alive) is forgotten. It reports
// whether m changed. p.mu must be held.
func (p *Pool) recordIntent(name string, m Member, prune bool) bool {
	if m.Status == StatusAlive {
		p.intents[name] = time.Now() // counts if it goes within RetainDead
		return false
	}
	if prune {
		p.forget(name)
		return true
	}
	p.intents[name] = time.Now()
	if m.Status != StatusFailed {
		return false
	}
	m.Status, m.Since = StatusLeft, time.Now()
	p.members[name] = m
	return true
}

// ForceLeave turns the failed member named name Left, here and, through
// a gossiped leave intent, in every member's view, as if it had left:
// nobody tries to reconnect to it, and the leader deregisters its node
// (serf's RemoveFailedNode, Consul's force-leave). With prune the member
// is forgotten at once instead of after RetainDead. An alive member, this
// member and an unknown name are left as they are. It returns once the
// intent has gone out, or with ctx's error.
func (p *Pool) ForceLeave(ctx context.Context, name string, prune bool) error {
	p.mu.Lock()
	m, known := p.members[name]
	if !known || name == p.name || m.Status == StatusAlive {
		p.mu.Unlock()
		return nil
	}
	p.recordIntent(name, m, prune)
	p.mu.Unlock()
	p.signal()
	p.logger.Info("forced a member to leave", "peer", name, "prune", prune)
	if p.numAlive() <= 1 {
		return nil
	}
	kind := byte(msgLeaveIntent)
	if prune {
		kind = msgPruneIntent
	}
	done := make(chan struct{})
	p.broadcasts.QueueBroadcast(&intentBroadcast{name: name, msg: encodeIntentOf(kind, name), done: done})
	select {
	case <-done:
		return nil
	case <-p.stop:
		return ErrShutdown
	case <-ctx.Done():
		return fmt.Errorf("gossip force-leave %s: intent not sent: %w", name, ctx.Err())
	}
}

// numAlive counts alive members, this one included; the broadcast queue
// scales retransmissions with it.
func (p *Pool) numAlive() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, m := range p.members {
		if m.Status == StatusAlive {
			n++
		}
	}
	return n
}
