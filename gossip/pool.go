package gossip

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Pool is one memberlist pool (LAN or WAN) this agent is a member of.
type Pool struct {
	cfg     Config
	name    string // this member's name
	timing  Timing // read back from memberlist's config once it runs
	logger  *slog.Logger
	ml      *memberlist.Memberlist
	changes chan struct{} // buffered 1: level-triggered "something changed"
	limiter *logLimiter   // memberlist's log lines caused by the network

	// conflicts counts the name conflicts memberlist reported;
	// conflictLogged is when each name's last line was logged.
	conflicts      atomic.Uint64
	conflictLogged sync.Map // member name → time.Time
	// incompatible are the peers refused for their protocol version
	// (incompatible.go).
	incompatible incompatiblePeers

	// broadcasts queues leave intents for memberlist's gossip.
	broadcasts *memberlist.TransmitLimitedQueue

	mu sync.Mutex
	// members is by name; failed and left ones are kept RetainDead. Only
	// put and forget (index.go) add and remove members or change their
	// Addr, Node or ID, so that index follows; other writes change their
	// status only.
	members    map[string]Member
	index      index                   // members by address, node name and ID
	intents    map[string]time.Time    // leave intents received, by member name
	memberKeys map[string]fingerprints // each member's key fingerprints, from its metadata
	// updated is closed, and replaced, on every member event: keyring
	// operations wait on it (keyring_ops.go). version counts the events.
	updated chan struct{}
	version uint64
	pending map[uint64]chan keyReply // keyring operations initiated here, by request ID
	seen    seenSet                  // the user events seen lately (userevent.go)

	// coords computes this member's network coordinate from its probes
	// (coordinates.go); nil with Config.DisableCoordinates.
	coords *coordinates

	// meta is this member's encoded metadata, as NodeMeta gives it to
	// memberlist; it changes with the keyring.
	meta atomic.Pointer[[]byte]

	keyMu   sync.Mutex          // serializes keyring changes; guards keys
	keyring *memberlist.Keyring // nil without encryption
	keys    [][]byte            // the keyring's keys, primary first: a copy memberlist never sees
	opMu    sync.Mutex          // one keyring operation initiated here at a time
	keyOps  chan keyRequest     // operations received from other members, for keyWorker
	stop    chan struct{}       // closed by Shutdown: keyWorker and keyring sends return

	life sync.Mutex // serializes Join's start, Leave and Shutdown
	down bool
	// leaving is set by Leave (under life) and read by reconnect, which
	// must not take life: Shutdown holds it while waiting for reconnect.
	leaving atomic.Bool
	wg      sync.WaitGroup // Join attempts, keyring sends, keyWorker and reconnectLoop
}

// newPool returns a pool's state, without memberlist.
func newPool(cfg Config, logger *slog.Logger) *Pool {
	p := &Pool{
		cfg:        cfg,
		name:       cfg.MemberName(),
		logger:     logger,
		changes:    make(chan struct{}, 1),
		limiter:    newLogLimiter(logLimitInterval),
		members:    make(map[string]Member),
		index:      newIndex(),
		intents:    make(map[string]time.Time),
		memberKeys: make(map[string]fingerprints),
		updated:    make(chan struct{}),
		pending:    make(map[uint64]chan keyReply),
		keyOps:     make(chan keyRequest, keyOpQueue),
		stop:       make(chan struct{}),
	}
	p.broadcasts = &memberlist.TransmitLimitedQueue{NumNodes: p.numAlive, RetransmitMult: cfg.Timing.RetransmitMult}
	return p
}

// New creates the pool's memberlist and binds its UDP and TCP listeners. The
// pool starts as a cluster of one; Join contacts others. logger may be nil.
//
// With a key (Config.EncryptKey, or the keyring in Config.KeyringFile),
// all gossip is encrypted and only members holding one of this member's
// keys can join; see keyring.go.
func New(cfg Config, logger *slog.Logger) (*Pool, error) {
	return create(cfg, logger, nil)
}

// create is New with the transport memberlist sends through: nil for its
// own sockets; tests pass one that can cut the network (export_test.go).
func create(cfg Config, logger *slog.Logger, transport memberlist.Transport) (*Pool, error) {
	if cfg.RetainDead == 0 {
		cfg.RetainDead = cfg.Timing.GossipToTheDead
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "gossip", "pool", cfg.Pool.String())
	keys, note, err := initialKeys(cfg)
	if err != nil {
		return nil, fmt.Errorf("gossip: %w", err)
	}
	if note != "" {
		logger.Warn(note, "path", cfg.KeyringFile)
	}
	md := cfg.meta()
	md.Keys = fingerprintsOf(keys)
	encoded, err := encodeMeta(md)
	if err != nil {
		return nil, fmt.Errorf("gossip: encode metadata: %w", err)
	}
	mlc := cfg.memberlistConfig()
	p := newPool(cfg, logger)
	p.meta.Store(&encoded)
	if len(keys) > 0 {
		if p.keyring, err = memberlist.NewKeyring(keys[1:], keys[0]); err != nil {
			return nil, fmt.Errorf("gossip keyring: %w", err) // not reached: the keys were checked
		}
		p.keys = keys
		mlc.Keyring = p.keyring
	}
	filter := peerFilter{kind: cfg.Pool, dc: cfg.Datacenter, name: cfg.MemberName(), id: cfg.NodeID, held: p.heldName,
		min: cfg.ProtocolMin, max: cfg.ProtocolMax, incompatible: p.refuseProtocol}
	mlc.Delegate = delegate{p: p}
	mlc.Events = eventDelegate{p: p}
	mlc.Conflict = conflictDelegate{p: p}
	mlc.Alive = filter
	mlc.Merge = filter
	if !cfg.DisableCoordinates {
		if p.coords, err = newCoordinates(); err != nil {
			return nil, err
		}
		mlc.Ping = pingDelegate{p: p}
	}
	mlc.Logger = newStdLogger(logger, p.limiter)
	mlc.Transport = transport
	ml, err := memberlist.Create(mlc)
	if err != nil {
		return nil, fmt.Errorf("gossip: start %s pool on %s:%d: %w", cfg.Pool, mlc.BindAddr, cfg.BindPort, err)
	}
	p.ml = ml
	// memberlist keeps mlc as its config and writes to it only in
	// Create: what it holds now is what it runs with.
	p.timing = timingFrom(mlc)
	p.timing.ReconnectInterval = cfg.Timing.ReconnectInterval
	p.wg.Go(p.keyWorker)
	if cfg.Timing.ReconnectInterval > 0 {
		p.wg.Go(p.reconnectLoop)
	}
	local := p.LocalMember()
	logger.Info("gossip pool started", "member", p.name, "addr", local.Addr, "port", local.Port,
		"role", cfg.Role, "encrypted", p.keyring != nil, "keys", len(keys))
	return p, nil
}

// DroppedLogLines counts the log lines this pool has left out since it
// started: memberlist's complaints about what it receives (packets it
// cannot decrypt or decode, and the like) are logged at most once a
// minute per kind and source address, so that a flood of bad packets does
// not flood the log (logger.go). Export it as a counter.
func (p *Pool) DroppedLogLines() uint64 { return p.limiter.Dropped() }

// HealthScore is memberlist's awareness of this member's own health: 0
// when it keeps up with the protocol, more when it falls behind (Consul's
// serf health_score).
func (p *Pool) HealthScore() int { return p.ml.GetHealthScore() }

// Timing returns the timers the pool runs with, as its memberlist was
// given them (and the pool's own ReconnectInterval).
func (p *Pool) Timing() Timing { return p.timing }

// Encrypted reports whether the pool's gossip is encrypted.
func (p *Pool) Encrypted() bool { return p.keyring != nil }

// Join contacts each of addrs ("host" or "host:port"; the port defaults to
// this pool's bind port) and merges state with every one that answers. It
// returns how many answered; the error is nil when at least one did. A
// member of another datacenter (LAN), a client (WAN), a peer with another
// encryption key or an incompatible protocol does not count.
//
// Each address is tried for at most Timing.TCPTimeout. When ctx ends first,
// Join returns ctx's error at once; the attempt in flight finishes in the
// background (and may still join), and Shutdown waits for it.
func (p *Pool) Join(ctx context.Context, addrs []string) (int, error) {
	if len(addrs) == 0 {
		return 0, nil
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("gossip join: %w", err)
	}
	addrs = slices.Clone(addrs)
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	p.life.Lock()
	if p.down {
		p.life.Unlock()
		return 0, ErrShutdown
	}
	p.wg.Go(func() {
		n, err := p.ml.Join(addrs)
		done <- result{n, err}
	})
	p.life.Unlock()

	select {
	case r := <-done:
		if r.err != nil {
			return r.n, fmt.Errorf("gossip join %s: %w", strings.Join(addrs, ","), r.err)
		}
		return r.n, nil
	case <-ctx.Done():
		return 0, fmt.Errorf("gossip join %s: %w", strings.Join(addrs, ","), ctx.Err())
	}
}

// Leave tells the other members this one is leaving, so they see it Left
// rather than Failed: it gossips a leave intent, then memberlist's leave
// message, and waits up to timeout (which must be positive) for both to go
// out. The pool keeps running until Shutdown; Leave twice is harmless. On a
// timeout the others may see this member Failed.
func (p *Pool) Leave(timeout time.Duration) error {
	if timeout <= 0 {
		return fmt.Errorf("gossip leave: timeout must be positive, got %s", timeout)
	}
	deadline := time.Now().Add(timeout)
	p.life.Lock()
	defer p.life.Unlock()
	if p.down {
		return ErrShutdown
	}
	var intentErr error
	if !p.leaving.Load() && p.numAlive() > 1 {
		p.leaving.Store(true)
		done := make(chan struct{})
		p.broadcasts.QueueBroadcast(&intentBroadcast{name: p.name, msg: encodeIntent(p.name), done: done})
		t := time.NewTimer(timeout)
		select {
		case <-done:
		case <-t.C:
			intentErr = fmt.Errorf("gossip leave: intent not sent within %s", timeout)
		}
		t.Stop()
	}
	p.leaving.Store(true)
	// memberlist's Leave must get some time even when the intent used it
	// all: without its message the others see a failure, not a leave.
	if err := p.ml.Leave(max(time.Until(deadline), p.cfg.Timing.GossipInterval)); err != nil {
		return fmt.Errorf("gossip leave: %w", err)
	}
	return intentErr
}

// Shutdown stops gossiping without leaving, so the others see this member
// Failed (call Leave first for a graceful exit). It closes the listeners and
// waits for Join attempts in flight. Later calls return nil; Members and
// LocalMember keep returning the last snapshot.
func (p *Pool) Shutdown() error {
	p.life.Lock()
	defer p.life.Unlock()
	if p.down {
		return nil
	}
	p.down = true
	close(p.stop)
	err := p.ml.Shutdown()
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("gossip shutdown: %w", err)
	}
	p.logger.Info("gossip pool stopped", "member", p.name)
	return nil
}

// Changes returns the pool's change signal: it receives a value when
// members joined, failed, left or changed their metadata since it was last
// received. Signals coalesce (the channel holds at most one), so read the
// state with Members after each. The channel is the same on every call and
// is meant for one consumer; it is never closed.
func (p *Pool) Changes() <-chan struct{} { return p.changes }

// Members returns a snapshot of the pool's members, this one included,
// sorted by name: alive members, and failed or left ones until RetainDead
// after they failed or left.
func (p *Pool) Members() []Member {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Member, 0, len(p.members))
	for name, m := range p.members {
		if p.expired(m, now) {
			p.forget(name)
			continue
		}
		out = append(out, m)
	}
	for name, at := range p.intents {
		if now.Sub(at) > p.cfg.RetainDead {
			delete(p.intents, name)
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// LocalMember returns this member as the pool sees it; after New its Port is
// the bound port even when BindPort was 0.
func (p *Pool) LocalMember() Member {
	p.mu.Lock()
	m, ok := p.members[p.name]
	p.mu.Unlock()
	if ok {
		return m
	}
	// memberlist announces this member to the event delegate while
	// Create runs, so this is not reached; build it anyway rather than
	// return a zero Member.
	n := p.ml.LocalNode()
	return memberOf(p.cfg.Pool, n, p.cfg.meta(), StatusAlive, time.Now())
}

// observe records what memberlist reported about n (StatusAlive on join or
// update, StatusFailed when gone) and signals Changes. It runs on
// memberlist's receive loop: no blocking, no calls into memberlist.
func (p *Pool) observe(n *memberlist.Node, status Status) {
	md, err := decodeMeta(n.Meta)
	if err != nil {
		// The peer filter refuses such members before they join; an event
		// about one means memberlist got it some other way.
		p.logger.Warn("ignoring member with bad metadata", "peer", n.Name, "err", err)
		return
	}
	now := time.Now()
	m := memberOf(p.cfg.Pool, n, md, status, now)
	if status == StatusAlive {
		p.forgetIncompatible(n.Name)
	}
	p.mu.Lock()
	old, known := p.members[n.Name]
	switch {
	case status == StatusAlive && known && old.Status != StatusAlive:
		delete(p.intents, n.Name) // back after failing or leaving
	case status == StatusFailed:
		if p.coords != nil {
			p.coords.forget(n.Name)
		}
		if at, ok := p.intents[n.Name]; n.Name == p.name || ok && now.Sub(at) <= p.cfg.RetainDead {
			m.Status = StatusLeft
		}
	}
	if known && old.Status == m.Status {
		m.Since = old.Since // a metadata update is not a status change
	}
	p.put(m)
	p.memberKeys[n.Name] = md.Keys
	close(p.updated)
	p.updated = make(chan struct{})
	p.version++
	p.mu.Unlock()
	p.signal()
}

// Version counts the member events (joins, failures, leaves, metadata
// updates) the pool has seen: a caller that polls the members can skip
// building the list (O(members)) while it has not moved. Failed members
// forgotten after RetainDead do not move it.
func (p *Pool) Version() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.version
}

// signal raises the Changes signal without blocking.
func (p *Pool) signal() {
	select {
	case p.changes <- struct{}{}:
	default: // a signal is already pending; the consumer reads all of it
	}
}

// NameConflicts returns how many times memberlist saw two agents claim one
// member name in this pool.
func (p *Pool) NameConflicts() uint64 { return p.conflicts.Load() }
