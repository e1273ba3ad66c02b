package gossip

import (
	"math/rand/v2"
	"net/netip"
	"time"
)

// Reconnecting to failed members. memberlist never probes a member it
// declared dead, so after a partition heals nothing crosses it: each side
// keeps seeing the other failed until a periodic push/pull happens to pick
// a member on the other side, and a member that was cut off alone sees
// every other one dead and syncs with none. Like serf, the pool therefore
// tries, every Timing.ReconnectInterval, to join one random failed member:
// the push/pull of that join shows each side that the other declared it
// dead, and both refute it.

// reconnectLoop makes one reconnect attempt per jittered interval until
// Shutdown. Attempts are sequential, so a member that does not answer
// costs at most one TCPTimeout at a time.
func (p *Pool) reconnectLoop() {
	interval := p.cfg.Timing.ReconnectInterval
	t := time.NewTimer(jittered(interval))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.reconnect()
		t.Reset(jittered(interval))
	}
}

// jittered returns d plus up to a quarter of it at random, so that pools
// started together do not attempt together.
func jittered(d time.Duration) time.Duration {
	if d < 4 {
		return d
	}
	return d + rand.N(d/4)
}

// reconnect tries to join one failed member, if reconnectTarget picks one.
func (p *Pool) reconnect() {
	// A member leaving must not pull itself back in.
	if p.leaving.Load() {
		return
	}
	m, ok := p.reconnectTarget(rand.Float32(), rand.IntN)
	if !ok {
		return
	}
	addr := netip.AddrPortFrom(m.Addr, m.Port).String()
	if _, err := p.ml.Join([]string{addr}); err != nil {
		// Expected while the member is down or still cut off.
		p.logger.Debug("reconnect to failed member", "peer", m.Name, "addr", addr, "err", err)
		return
	}
	p.logger.Info("reconnected to failed member", "peer", m.Name, "addr", addr)
}

// reconnectTarget picks a failed member to reconnect to: a random one of
// those failed for at most RetainDead, never one that left or sent a leave
// intent. roll, in [0, 1), decides whether to try at all: with serf's
// rule, only when roll < failed/alive, so that the whole pool makes about
// one attempt per failed member per interval however large it is, while a
// member that sees more failed members than alive ones (cut off alone,
// say) tries every time. pick(n) returns a random index below n.
func (p *Pool) reconnectTarget(roll float32, pick func(int) int) (Member, bool) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var failed []Member
	alive := 0
	for name, m := range p.members {
		switch {
		case m.Status == StatusAlive:
			alive++
		case m.Status == StatusFailed && name != p.name && now.Sub(m.Since) <= p.cfg.RetainDead:
			if _, left := p.intents[name]; !left {
				failed = append(failed, m)
			}
		}
	}
	if len(failed) == 0 || roll >= float32(len(failed))/float32(max(alive, 1)) {
		return Member{}, false
	}
	return failed[pick(len(failed))], true
}
