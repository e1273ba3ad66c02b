package gossip

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// Keyring operations reach every alive member of the pool. memberlist has
// no request/response queries (serf builds them; cairn does not use serf),
// so an operation is:
//
//  1. checked against what the members gossip of their keys (their
//     metadata): a key becomes primary only once every alive member
//     holds it, and is removed only once no alive member uses it as its
//     primary, so no member is ever cut off;
//  2. applied here, then sent to every other alive member with
//     memberlist's SendReliable (TCP, encrypted with this member's primary
//     key: only members sharing a key can send operations, and only
//     members holding this member's keys can read them);
//  3. applied by each member, which re-announces its metadata, and
//     answers only when it fails (a reply naming why);
//  4. done when every alive member's metadata shows the change, or it
//     failed, or ctx ended. The report is then built from metadata, as
//     ListKeys builds it.
//
// Wire format (memberlist user messages):
//
//	msgKeyOp:    type, op, request ID (8), sender name (1-byte length), key (1-byte length)
//	msgKeyReply: type, request ID (8), replier name (1-byte length), reason (2-byte length)
const (
	msgKeyOp    = 2
	msgKeyReply = 3
)

const (
	// keyOpQueue is how many received operations wait for keyWorker; more
	// are dropped (and their initiator times out on them).
	keyOpQueue = 16
	// maxParallelSends bounds the operations in flight from one initiator.
	maxParallelSends = 16
	// sendAttempts is how many times an operation is sent to one member,
	// sendBackoff the pause before the second attempt, doubled after.
	sendAttempts = 3
	sendBackoff  = 100 * time.Millisecond
	// maxReason caps a failure reason in a reply.
	maxReason = 512
	// settleGossipRounds is how many gossip intervals a refusal waits
	// for the other members' latest metadata to arrive.
	settleGossipRounds = 10
	// recentOps is how many request IDs keyWorker remembers to ignore a
	// repeated operation.
	recentOps = 64
)

// KeyringReport is what the alive members of one pool hold, in the shape
// of Consul's keyring API.
type KeyringReport struct {
	// Keys maps each key (base64) to how many alive members hold it. Only
	// keys this member holds appear: the others gossip fingerprints, not
	// keys (see Messages).
	Keys map[string]int
	// PrimaryKeys maps each key (base64) to how many alive members
	// encrypt with it.
	PrimaryKeys map[string]int
	// NumNodes is how many members are alive, this one included.
	NumNodes int
	// NumErrs is how many members failed a change or did not confirm it.
	NumErrs int
	// Messages maps a member's name to what is wrong with it: an
	// operation it failed or did not confirm, keys this member does not
	// know (by fingerprint), or no keys reported at all.
	Messages map[string]string
}

// keyRequest is one operation as members send it.
type keyRequest struct {
	op   keyOp
	id   uint64
	from string
	key  []byte
}

// keyReply is a member's answer that an operation failed on it.
type keyReply struct {
	id     uint64
	from   string
	reason string
}

func encodeKeyOp(r keyRequest) []byte {
	b := make([]byte, 0, 12+len(r.from)+len(r.key))
	b = append(b, msgKeyOp, byte(r.op))
	b = binary.BigEndian.AppendUint64(b, r.id)
	b = append(b, byte(len(r.from)))
	b = append(b, r.from...)
	b = append(b, byte(len(r.key)))
	return append(b, r.key...)
}

// decodeKeyOp decodes a message from the network into fresh memory; ok is
// false for anything encodeKeyOp cannot have produced.
func decodeKeyOp(b []byte) (r keyRequest, ok bool) {
	if len(b) < 11 || b[0] != msgKeyOp {
		return r, false
	}
	r.op, r.id = keyOp(b[1]), binary.BigEndian.Uint64(b[2:10])
	rest := b[10:]
	n := int(rest[0])
	if n == 0 || len(rest) < 1+n+1 {
		return r, false
	}
	r.from = string(rest[1 : 1+n])
	rest = rest[1+n:]
	if int(rest[0]) != len(rest)-1 || memberlist.ValidateKey(rest[1:]) != nil {
		return r, false
	}
	r.key = slices.Clone(rest[1:])
	return r, r.op >= opInstall && r.op <= opRemove
}

func encodeKeyReply(r keyReply) []byte {
	reason := r.reason
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	b := make([]byte, 0, 12+len(r.from)+len(reason))
	b = append(b, msgKeyReply)
	b = binary.BigEndian.AppendUint64(b, r.id)
	b = append(b, byte(len(r.from)))
	b = append(b, r.from...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(reason)))
	return append(b, reason...)
}

// decodeKeyReply decodes a message from the network; ok is false for
// anything encodeKeyReply cannot have produced.
func decodeKeyReply(b []byte) (r keyReply, ok bool) {
	if len(b) < 10 || b[0] != msgKeyReply {
		return r, false
	}
	r.id = binary.BigEndian.Uint64(b[1:9])
	rest := b[9:]
	n := int(rest[0])
	if n == 0 || len(rest) < 1+n+2 {
		return r, false
	}
	r.from = string(rest[1 : 1+n])
	rest = rest[1+n:]
	if int(binary.BigEndian.Uint16(rest)) != len(rest)-2 || len(rest)-2 > maxReason {
		return r, false
	}
	r.reason = string(rest[2:])
	return r, true
}

// receiveKeyOp queues an operation from another member for keyWorker. It
// runs on memberlist's goroutines: no blocking.
func (p *Pool) receiveKeyOp(b []byte) {
	r, ok := decodeKeyOp(b)
	if !ok || r.from == p.name {
		return
	}
	select {
	case p.keyOps <- r:
	default:
		p.logger.Warn("dropping a keyring operation: too many queued", "peer", r.from, "op", r.op.String())
	}
}

// receiveKeyReply hands a member's failure to the operation waiting for
// it, if any. It runs on memberlist's goroutines: no blocking.
func (p *Pool) receiveKeyReply(b []byte) {
	r, ok := decodeKeyReply(b)
	if !ok {
		return
	}
	p.mu.Lock()
	ch := p.pending[r.id]
	p.mu.Unlock()
	if ch != nil {
		select {
		case ch <- r:
		default: // more replies than members asked: not from them
		}
	}
}

// keyWorker applies the operations other members send, one at a time,
// until Shutdown. It answers those that fail.
func (p *Pool) keyWorker() {
	var recent [recentOps]uint64
	next := 0
	for {
		select {
		case <-p.stop:
			return
		case r := <-p.keyOps:
			if slices.Contains(recent[:], r.id) {
				continue // sent again after a failed attempt that arrived
			}
			recent[next] = r.id
			next = (next + 1) % recentOps
			err := p.applyKeyOp(r.op, r.key)
			if err == nil {
				continue
			}
			p.logger.Warn("keyring operation from a peer failed", "peer", r.from, "op", r.op.String(), "err", err)
			p.reply(r, err)
		}
	}
}

// reply tells the initiator of r why it failed here.
func (p *Pool) reply(r keyRequest, why error) {
	n := p.node(r.from)
	if n == nil {
		return // gone
	}
	msg := encodeKeyReply(keyReply{id: r.id, from: p.name, reason: why.Error()})
	if err := p.ml.SendReliable(n, msg); err != nil {
		p.logger.Debug("could not answer a keyring operation", "peer", r.from, "err", err)
	}
}

// node returns the address of the alive member named name for
// memberlist's Send methods, nil if there is none. (The nodes memberlist's
// Members returns are its own, changed under its lock: not to be read.)
func (p *Pool) node(name string) *memberlist.Node {
	p.mu.Lock()
	m, ok := p.members[name]
	p.mu.Unlock()
	if !ok || m.Status != StatusAlive {
		return nil
	}
	return &memberlist.Node{Name: m.Name, Addr: net.IP(m.Addr.AsSlice()), Port: m.Port}
}

// ListKeys reports the keys the alive members hold, from their metadata.
// A pool without encryption returns ErrEncryptionDisabled.
func (p *Pool) ListKeys(ctx context.Context) (KeyringReport, error) {
	if err := ctx.Err(); err != nil {
		return KeyringReport{}, fmt.Errorf("gossip keyring list: %w", err)
	}
	if p.keyring == nil {
		return KeyringReport{}, ErrEncryptionDisabled
	}
	return p.report(), nil
}

// InstallKey adds key (base64) to the keyring of every alive member, for
// decryption only. It returns the report afterwards; when some member did
// not confirm by the time ctx ends (or failed: a full keyring), the error
// wraps ErrKeyringIncomplete and the report's Messages say which.
func (p *Pool) InstallKey(ctx context.Context, key string) (KeyringReport, error) {
	return p.changeKeys(ctx, opInstall, key)
}

// UseKey makes key (base64) the primary key, the one that encrypts, on
// every alive member. It is refused with ErrKeyNotInstalled, naming them,
// when some member does not hold the key. Otherwise as InstallKey.
func (p *Pool) UseKey(ctx context.Context, key string) (KeyringReport, error) {
	return p.changeKeys(ctx, opUse, key)
}

// RemoveKey removes key (base64) from the keyring of every alive member. It
// is refused with ErrPrimaryKey, naming them, when key is the primary key
// of this member or of any alive member. Otherwise as InstallKey.
func (p *Pool) RemoveKey(ctx context.Context, key string) (KeyringReport, error) {
	return p.changeKeys(ctx, opRemove, key)
}

func (p *Pool) changeKeys(ctx context.Context, op keyOp, encoded string) (KeyringReport, error) {
	key, err := ParseKey(encoded)
	if err != nil {
		return KeyringReport{}, err
	}
	p.opMu.Lock()
	defer p.opMu.Unlock()
	p.life.Lock()
	down := p.down
	p.life.Unlock()
	switch {
	case down:
		return KeyringReport{}, ErrShutdown
	case p.keyring == nil:
		return KeyringReport{}, ErrEncryptionDisabled
	}
	targets, err := p.checked(ctx, op, key)
	if err != nil {
		return p.report(), err
	}
	if err := p.applyKeyOp(op, key); err != nil {
		return p.report(), fmt.Errorf("gossip keyring %s: %w", op, err)
	}
	failed := p.spread(ctx, op, key, targets)
	r := p.report()
	for name, why := range failed {
		r.Messages[name] = why
	}
	r.NumErrs = len(failed)
	if len(failed) > 0 {
		return r, fmt.Errorf("%w: %s failed on %d of %d members: %s",
			ErrKeyringIncomplete, op, len(failed), r.NumNodes, summarize(failed))
	}
	return r, nil
}

// checked returns the members to send op to once precheck passes. What
// this member knows of the others' keys may lag behind an operation that
// another member just finished, so a refusal because of another member
// stands only once it has lasted settleGossipRounds gossip intervals (or
// ctx ended); one because of this member's own keyring at once.
func (p *Pool) checked(ctx context.Context, op keyOp, key []byte) (map[string]fingerprints, error) {
	if err := p.precheckLocal(op, key); err != nil {
		return nil, err
	}
	settle := time.NewTimer(settleGossipRounds * p.cfg.Timing.GossipInterval)
	defer settle.Stop()
	for {
		p.mu.Lock()
		updated := p.updated
		p.mu.Unlock()
		targets := p.aliveOthers()
		err := p.precheck(op, key, targets)
		if err == nil {
			return targets, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-settle.C:
			return nil, err
		case <-updated:
		}
	}
}

// aliveOthers returns the key fingerprints of the alive members other than
// this one, by name.
func (p *Pool) aliveOthers() map[string]fingerprints {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]fingerprints)
	for name, m := range p.members {
		if name != p.name && m.Status == StatusAlive {
			out[name] = p.memberKeys[name]
		}
	}
	return out
}

// precheckLocal refuses using a key this member lacks and removing its
// primary key.
func (p *Pool) precheckLocal(op keyOp, key []byte) error {
	fp := fingerprintOf(key)
	p.keyMu.Lock()
	local := fingerprintsOf(p.keys)
	p.keyMu.Unlock()
	switch op {
	case opUse:
		if !local.contains(fp) {
			return fmt.Errorf("%w on this member (%s); install it first", ErrKeyNotInstalled, p.name)
		}
	case opRemove:
		if primary, _ := local.primary(); primary == fp {
			return fmt.Errorf("%w of this member (%s); make another key primary first", ErrPrimaryKey, p.name)
		}
	}
	return nil
}

// precheck refuses an operation that would cut members off: using a key
// some member lacks, removing a key some member encrypts with.
func (p *Pool) precheck(op keyOp, key []byte, targets map[string]fingerprints) error {
	fp := fingerprintOf(key)
	var names []string
	switch op {
	case opUse:
		for name, fps := range targets {
			if !fps.contains(fp) {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			return fmt.Errorf("%w on %s; install it first (or wait for them to report it)", ErrKeyNotInstalled, listNames(names))
		}
	case opRemove:
		for name, fps := range targets {
			if primary, ok := fps.primary(); ok && primary == fp {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			return fmt.Errorf("%w of %s; make another key primary first", ErrPrimaryKey, listNames(names))
		}
	}
	return nil
}

// spread sends the operation to every target and waits until each one's
// metadata shows it applied, or it failed, or ctx ended. It returns why,
// for each target that did not confirm.
func (p *Pool) spread(ctx context.Context, op keyOp, key []byte, targets map[string]fingerprints) map[string]string {
	failed := make(map[string]string)
	if len(targets) == 0 {
		return failed
	}
	id := rand.Uint64()
	replies := make(chan keyReply, len(targets))
	p.mu.Lock()
	p.pending[id] = replies
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}()
	sendCtx, cancel := context.WithCancel(ctx)
	defer cancel() // the sends still waiting to go out give up
	names := make([]string, 0, len(targets))
	for name := range targets {
		names = append(names, name)
	}
	sent := p.sendAll(sendCtx, encodeKeyOp(keyRequest{op: op, id: id, from: p.name, key: key}), names)

	fp := fingerprintOf(key)
	waiting := make(map[string]bool, len(targets))
	for name := range targets {
		waiting[name] = true
	}
	for {
		p.mu.Lock()
		updated := p.updated
		for name := range waiting {
			m, ok := p.members[name]
			switch {
			case !ok || m.Status != StatusAlive:
				failed[name] = "left the pool or failed during the operation"
				delete(waiting, name)
			case applied(op, fp, p.memberKeys[name]):
				delete(waiting, name)
			}
		}
		p.mu.Unlock()
		if len(waiting) == 0 {
			return failed
		}
		select {
		case <-ctx.Done():
			for name := range waiting {
				failed[name] = "did not confirm the change: " + ctx.Err().Error()
			}
			return failed
		case s := <-sent:
			if s.err != nil && waiting[s.name] {
				failed[s.name] = "could not be reached: " + s.err.Error()
				delete(waiting, s.name)
			}
		case r := <-replies:
			if waiting[r.from] {
				failed[r.from] = r.reason
				delete(waiting, r.from)
			}
		case <-updated:
		}
	}
}

// applied reports whether a member's fingerprints show op applied.
func applied(op keyOp, fp fingerprint, fps fingerprints) bool {
	switch op {
	case opInstall:
		return fps.contains(fp)
	case opUse:
		primary, ok := fps.primary()
		return ok && primary == fp
	case opRemove:
		return fps != "" && !fps.contains(fp)
	}
	return false
}

// sendResult is the outcome of sending an operation to one member.
type sendResult struct {
	name string
	err  error
}

// sendAll sends msg to each named member, at most maxParallelSends at a
// time, each retried up to sendAttempts times, and reports each outcome
// on the returned channel (buffered for all of them). The sends are owned
// by the pool: Shutdown waits for them.
func (p *Pool) sendAll(ctx context.Context, msg []byte, names []string) <-chan sendResult {
	out := make(chan sendResult, len(names))
	sem := make(chan struct{}, maxParallelSends)
	p.life.Lock()
	defer p.life.Unlock()
	for _, name := range names {
		if p.down {
			out <- sendResult{name, ErrShutdown}
			continue
		}
		n := p.node(name)
		p.wg.Go(func() {
			if n == nil {
				out <- sendResult{name, errors.New("no longer alive")}
				return
			}
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				out <- sendResult{name, ctx.Err()}
				return
			}
			out <- sendResult{name, p.send(ctx, n, msg)}
		})
	}
	return out
}

// send sends msg to n reliably, retrying a failed attempt after a pause
// unless ctx ends or the pool shuts down first.
func (p *Pool) send(ctx context.Context, n *memberlist.Node, msg []byte) error {
	wait := sendBackoff
	for attempt := 1; ; attempt++ {
		err := p.ml.SendReliable(n, msg)
		if err == nil || attempt == sendAttempts {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-p.stop:
			t.Stop()
			return err
		case <-t.C:
		}
		wait *= 2
	}
}

// report builds the pool's keyring report from this member's keyring and
// the other alive members' metadata.
func (p *Pool) report() KeyringReport {
	r := KeyringReport{Keys: map[string]int{}, PrimaryKeys: map[string]int{}, Messages: map[string]string{}, NumNodes: 1}
	p.keyMu.Lock()
	local := slices.Clone(p.keys)
	p.keyMu.Unlock()
	known := make(map[fingerprint]string, len(local))
	for i, k := range local {
		s := encodeKey(k)
		known[fingerprintOf(k)] = s
		r.Keys[s]++
		if i == 0 {
			r.PrimaryKeys[s]++
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, m := range p.members {
		if name == p.name || m.Status != StatusAlive {
			continue
		}
		r.NumNodes++
		fps := p.memberKeys[name]
		if fps == "" {
			r.Messages[name] = "reports no gossip keys"
			continue
		}
		var unknown []string
		for i := range fps.len() {
			s, ok := known[fps.at(i)]
			switch {
			case !ok && i == 0:
				unknown = append(unknown, fps.at(i).String()+" (its primary)")
			case !ok:
				unknown = append(unknown, fps.at(i).String())
			case i == 0:
				r.PrimaryKeys[s]++
				fallthrough
			default:
				r.Keys[s]++
			}
		}
		if len(unknown) > 0 {
			r.Messages[name] = fmt.Sprintf("holds keys %s does not, fingerprints %s", p.name, strings.Join(unknown, ", "))
		}
	}
	return r
}

// listNames lists member names for an error, sorted, at most ten.
func listNames(names []string) string {
	slices.Sort(names)
	if len(names) > 10 {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:10], ", "), len(names)-10)
	}
	return strings.Join(names, ", ")
}

// summarize lists the failures of an operation for an error, sorted by
// member, at most five.
func summarize(failed map[string]string) string {
	names := make([]string, 0, len(failed))
	for name := range failed {
		names = append(names, name)
	}
	slices.Sort(names)
	var parts []string
	for i, name := range names {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(names)-5))
			break
		}
		parts = append(parts, name+": "+failed[name])
	}
	return strings.Join(parts, "; ")
}
