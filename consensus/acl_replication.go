package consensus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// ACL replication, as Consul's: the leader of every datacenter other than
// the primary follows the primary's ACL data with a blocking query (through
// the WAN forward, with the replication token, which the primary checks
// for acl:write) and applies each new version through its own Raft log, so
// that every server of the datacenter resolves the primary's tokens from
// its own copy, and keeps doing so while the primary is unreachable
// (acl.down_policy decides for how long).

// replicationMaxWait is how long one blocking read of the primary's ACL
// data waits for a change.
const replicationMaxWait = 5 * time.Minute

// Backoff between failed rounds.
const (
	replicationRetryMin = 500 * time.Millisecond
	replicationRetryMax = 30 * time.Second
)

// errNoReplicationToken is the error of a secondary configured without a
// replication token.
var errNoReplicationToken = errors.New("no replication token: set acl.tokens.replication to a token with acl:write in the primary datacenter")

// aclReplication is the state of this server's replication, for
// /v1/acl/replication. The zero value is a server that does not replicate.
type aclReplication struct {
	mu  sync.Mutex
	st  rpc.ACLReplicationStatus
	bad time.Time // when the current run of failures began; zero: none
}

func (r *aclReplication) status() rpc.ACLReplicationStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

func (r *aclReplication) update(fn func(st *rpc.ACLReplicationStatus)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(&r.st)
}

// failed records err and returns how long replication has been failing.
func (r *aclReplication) failed(now time.Time, err error) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.LastError, r.st.LastErrorMessage = now, err.Error()
	if r.bad.IsZero() {
		r.bad = now
	}
	return now.Sub(r.bad)
}

func (r *aclReplication) succeeded(now time.Time, index uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bad = time.Time{}
	r.st.LastSuccess = now
	r.st.ReplicatedIndex, r.st.ReplicatedRoleIndex = index, index
	if r.st.ReplicationType == "tokens" {
		r.st.ReplicatedTokenIndex = index
	}
}

// RunACLReplication replicates the primary datacenter's ACL data into this
// one while this server leads, until ctx ends. It returns at once on a
// server of the primary datacenter, or with ACLs off.
func (c *Catalog) RunACLReplication(ctx context.Context) {
	cfg := c.cfg.ACL
	if !cfg.secondary(c.cfg.Datacenter) {
		return
	}
	typ := "policies"
	if cfg.TokenReplication {
		typ = "tokens"
	}
	c.repl.update(func(st *rpc.ACLReplicationStatus) {
		st.Enabled, st.SourceDatacenter, st.ReplicationType = true, cfg.PrimaryDatacenter, typ
	})
	for ctx.Err() == nil {
		changed := c.srv.LeadershipChanged()
		if !c.srv.IsLeader() {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return
			}
		}
		term, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { c.replicate(term) })
		select {
		case <-changed:
		case <-ctx.Done():
		}
		cancel()
		wg.Wait()
	}
}

// replicate runs replication rounds until ctx ends: a blocking read of the
// primary's ACL data newer than the last one applied, then one Raft write
// making this datacenter's copy that data.
func (c *Catalog) replicate(ctx context.Context) {
	cfg := c.cfg.ACL
	c.repl.update(func(st *rpc.ACLReplicationStatus) { st.Running = true })
	defer c.repl.update(func(st *rpc.ACLReplicationStatus) { st.Running = false })
	ep := &ACL{cat: c}
	var index uint64
	var backoff time.Duration
	for ctx.Err() == nil {
		started := time.Now()
		next, err := c.replicateOnce(ctx, ep, index)
		wait := cfg.ReplicationRate - time.Since(started)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failing := c.repl.failed(time.Now(), err)
			c.srv.logger.Warn("ACL replication from the primary datacenter failed", "dc", cfg.PrimaryDatacenter, "err", err, "failing_for", failing.Round(time.Second))
			if failing >= cfg.TokenTTL {
				c.markReplica(ctx, true)
			}
			backoff = min(max(2*backoff, replicationRetryMin), replicationRetryMax)
			wait = max(wait, backoff)
		} else {
			index, backoff = next, 0
			c.repl.succeeded(time.Now(), index)
		}
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
		}
	}
}

// replicateOnce reads the primary's ACL data newer than index and applies
// it; it returns the index it has applied.
func (c *Catalog) replicateOnce(ctx context.Context, ep *ACL, index uint64) (uint64, error) {
	cfg := c.cfg.ACL
	if cfg.ReplicationToken == "" {
		return index, errNoReplicationToken
	}
	args := &rpc.ACLReplicaRequest{QueryOptions: rpc.QueryOptions{
		Datacenter: cfg.PrimaryDatacenter, Token: cfg.ReplicationToken,
		MinQueryIndex: index, MaxQueryTime: replicationMaxWait, AllowStale: true,
	}}
	var reply rpc.ACLReplicaResponse
	if err := ep.Replica(ctx, args, &reply); err != nil {
		return index, fmt.Errorf("read the ACL data of datacenter %s: %w", cfg.PrimaryDatacenter, err)
	}
	if reply.Index <= index && index != 0 {
		// A stale server answered with older data, or the wait ended
		// with nothing new.
		return index, nil
	}
	rep := reply.Replica
	rep.WithTokens = cfg.TokenReplication
	if !rep.WithTokens {
		rep.Tokens = nil
	}
	if err := c.srv.apply(ctx, cmdACL, &catalog.ACLRequest{Op: catalog.ACLReplicate, Replica: &rep}); err != nil {
		return index, fmt.Errorf("apply the ACL data of datacenter %s at index %d: %w", cfg.PrimaryDatacenter, reply.Index, err)
	}
	c.markReplica(ctx, false)
	return reply.Index, nil
}

// markReplica marks this datacenter's replica stale, or clears the mark,
// when it is not so already: with acl.down_policy deny or allow, global
// tokens are judged by the down policy while it is marked.
func (c *Catalog) markReplica(ctx context.Context, stale bool) {
	switch c.cfg.ACL.DownPolicy {
	case DownPolicyDeny, DownPolicyAllow:
	default:
		if !stale && c.srv.Store().ACLReplicaStale() {
			break // a mark left by an earlier configuration: clear it
		}
		return
	}
	if c.srv.Store().ACLReplicaStale() == stale {
		return
	}
	if err := c.srv.apply(ctx, cmdACL, &catalog.ACLRequest{Op: catalog.ACLReplicaStale, Stale: stale}); err != nil {
		c.srv.logger.Warn("cannot mark the ACL replica", "stale", stale, "err", err)
		return
	}
	if stale {
		c.srv.logger.Warn("ACL replication has failed for longer than acl.token_ttl: global tokens now get acl.down_policy", "down_policy", c.cfg.ACL.DownPolicy)
	}
}
