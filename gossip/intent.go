package gossip

import (
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
//
// Wire format: msgLeaveIntent, one length byte, the member name.
const msgLeaveIntent = 1

func encodeIntent(name string) []byte {
	b := make([]byte, 0, 2+len(name))
	b = append(b, msgLeaveIntent, byte(len(name)))
	return append(b, name...)
}

// decodeIntent decodes a message from the network; ok is false for
// anything encodeIntent cannot have produced.
func decodeIntent(b []byte) (name string, ok bool) {
	if len(b) < 3 || b[0] != msgLeaveIntent || int(b[1]) != len(b)-2 {
		return "", false
	}
	return string(b[2:]), true
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
	name, ok := decodeIntent(b)
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
	p.intents[name] = time.Now()
	changed := m.Status == StatusFailed
	if changed {
		m.Status = StatusLeft
		p.members[name] = m
	}
	p.mu.Unlock()
	if !seen {
		p.broadcasts.QueueBroadcast(&intentBroadcast{name: name, msg: encodeIntent(name)})
	}
	if changed {
		p.signal()
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
