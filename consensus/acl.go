package consensus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// ACLConfig says whether the servers enforce ACLs, and how.
type ACLConfig struct {
	// Enabled turns enforcement on: every request is made with a token
	// (the anonymous one when it carries none) and may do only what the
	// token's policies allow. Default false (as in -dev).
	Enabled bool
	// DefaultAllow is what a token may do where no rule of its policies
	// says: false denies (default_policy = "deny", the secure choice),
	// true allows everything but managing ACLs. Default false.
	DefaultAllow bool
	// TokenMinExpirationTTL and TokenMaxExpirationTTL bound the lifetime a
	// token may be created with (ExpirationTTL, or ExpirationTime from
	// now). Defaults 1m and 24h, Consul's
	// (acl.token_min_expiration_ttl, acl.token_max_expiration_ttl).
	TokenMinExpirationTTL time.Duration
	TokenMaxExpirationTTL time.Duration
	// TokenSecretsReadable keeps each new token's secret in clear beside
	// its hash, so that acl:write holders read it back (Consul's
	// behaviour, acl.tokens_secret_readable). Default false: the servers
	// keep only the hash, and a leaked snapshot, Raft log or backup gives
	// nobody a working token.
	TokenSecretsReadable bool

	// PrimaryDatacenter is the datacenter whose policies, roles and global
	// tokens every other one replicates (primary_datacenter). Default ""
	// (this server's own: no replication).
	PrimaryDatacenter string
	// TokenReplication makes a secondary datacenter replicate global
	// tokens too, not only policies and roles
	// (acl.enable_token_replication). Default true: cairn's servers
	// resolve tokens only from their own copy, so without it a token of
	// the primary means nothing elsewhere.
	TokenReplication bool
	// ReplicationToken is the token a secondary's leader reads the
	// primary's ACL data with (acl.tokens.replication): it needs acl:write
	// there. Default "": no replication.
	ReplicationToken string
	// DownPolicy is what a secondary does with global tokens once its
	// replication has failed for longer than TokenTTL
	// (acl.down_policy): DownPolicyExtendCache (default, Consul's) and
	// DownPolicyAsyncCache keep using the last replica, DownPolicyDeny
	// refuses them, DownPolicyAllow allows everything but managing ACLs.
	// Local tokens are always judged by their own policies.
	DownPolicy string
	// TokenTTL is how long a secondary keeps trusting its replica while
	// replication fails, before DownPolicy applies (acl.token_ttl).
	// Default 30s, Consul's.
	TokenTTL time.Duration
	// ReplicationRate bounds how often a secondary's leader asks the
	// primary: at most once per this interval (Consul's
	// acl.replication_rate is 1/s). Default 1s.
	ReplicationRate time.Duration
}

// The down policies (acl.down_policy).
const (
	DownPolicyExtendCache = "extend-cache"
	DownPolicyAsyncCache  = "async-cache"
	DownPolicyDeny        = "deny"
	DownPolicyAllow       = "allow"
)

// DefaultACLConfig returns the defaults documented on ACLConfig.
func DefaultACLConfig() ACLConfig {
	return ACLConfig{
		TokenMinExpirationTTL: time.Minute,    // Consul's
		TokenMaxExpirationTTL: 24 * time.Hour, // Consul's
		TokenReplication:      true,
		DownPolicy:            DownPolicyExtendCache, // Consul's
		TokenTTL:              30 * time.Second,      // Consul's
		ReplicationRate:       time.Second,
	}
}

// secondary reports whether datacenter dc replicates its ACL data from
// another one.
func (c ACLConfig) secondary(dc string) bool {
	return c.Enabled && c.PrimaryDatacenter != "" && !strings.EqualFold(c.PrimaryDatacenter, dc)
}

// authorizer is what the endpoints ask before they read or write.
type authorizer = *acl.Authorizer

// resolved is a token turned into its authorizer, cached until the ACL
// data changes.
type resolved struct {
	index      uint64    // the ACL index it was resolved at
	expires    time.Time // the token's ExpirationTime; zero: never
	accessor   string
	management bool
	rules      []string
	authz      authorizer
}

// resolvedCacheSize bounds the cache of resolved tokens; past it the cache
// starts over, so a flood of made-up secrets cannot grow it.
const resolvedCacheSize = 4096

// aclResolver turns a request's secret into what it may do, from this
// server's own copy of the ACL data (replicated by Raft like the catalog),
// so that any server, a follower answering a stale read included, enforces
// without asking the leader. Safe for concurrent use.
type aclResolver struct {
	cfg   ACLConfig
	store *catalog.Store
	dc    string // this server's datacenter

	mu    sync.Mutex
	cache map[string]*resolved // by secret hash
}

func newACLResolver(cfg ACLConfig, dc string, store *catalog.Store) *aclResolver {
	return &aclResolver{cfg: cfg, dc: dc, store: store, cache: make(map[string]*resolved)}
}

// resolve returns the token's authorizer; nil when ACLs are off. An
// unknown secret is ErrACLNotFound. Before ACLs are bootstrapped (no
// anonymous token exists yet) the anonymous token has no policies: the
// default policy alone decides.
func (r *aclResolver) resolve(secret string) (*resolved, error) {
	if !r.cfg.Enabled {
		return nil, nil
	}
	hash := "anonymous"
	if secret != "" && secret != "anonymous" {
		hash = acl.HashSecret(secret)
	}
	index := r.store.ACLIndex()
	now := time.Now()
	r.mu.Lock()
	if res, ok := r.cache[hash]; ok && res.index == index {
		r.mu.Unlock()
		if res.expired(now) {
			return nil, rpc.ErrACLNotFound
		}
		return res, nil
	}
	r.mu.Unlock()

	res, err := r.compile(hash, index)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if len(r.cache) >= resolvedCacheSize {
		clear(r.cache)
	}
	r.cache[hash] = res
	r.mu.Unlock()
	if res.expired(now) {
		return nil, rpc.ErrACLNotFound
	}
	return res, nil
}

// expired reports whether the token had expired at now: it is refused
// from that instant on every server, whether or not it was deleted yet.
func (r *resolved) expired(now time.Time) bool {
	return !r.expires.IsZero() && !now.Before(r.expires)
}

func (r *aclResolver) compile(hash string, index uint64) (*resolved, error) {
	_, tok, err := r.store.ACLToken(nil, hash, true)
	if err != nil {
		return nil, err
	}
	res := &resolved{index: index}
	switch {
	case tok == nil && hash == "anonymous":
		res.accessor = catalog.AnonymousTokenID
	case tok == nil:
		return nil, rpc.ErrACLNotFound
	default:
		res.accessor, res.expires = tok.AccessorID, tok.ExpirationTime
	}
	if tok != nil && !tok.Local && r.replicaDown() {
		// A secondary cut off from the primary for longer than
		// acl.token_ttl: acl.down_policy decides about global tokens.
		res.authz = acl.New(r.cfg.DownPolicy == DownPolicyAllow)
		return res, nil
	}
	var policies []*acl.Policy
	add := func(rules string) {
		if parsed, err := acl.Parse(rules); err == nil { // validated when written; a bad one grants nothing
			res.rules = append(res.rules, rules)
			policies = append(policies, parsed)
		}
	}
	if tok != nil {
		links, svc, nodes := tok.Policies, tok.ServiceIdentities, tok.NodeIdentities
		for _, rl := range tok.Roles {
			_, role, err := r.store.ACLRole(nil, rl.ID, false)
			if err != nil {
				return nil, err
			}
			if role == nil { // deleted since: the link grants nothing
				continue
			}
			links = append(slices.Clone(links), role.Policies...)
			svc = append(slices.Clone(svc), role.ServiceIdentities...)
			nodes = append(slices.Clone(nodes), role.NodeIdentities...)
		}
		for _, link := range links {
			if link.ID == catalog.ManagementPolicyID {
				res.management = true
				continue
			}
			_, p, err := r.store.ACLPolicy(nil, link.ID, false)
			if err != nil {
				return nil, err
			}
			if p == nil || !p.AppliesIn(r.dc) {
				continue
			}
			add(p.Rules)
		}
		for _, id := range svc {
			if len(id.Datacenters) == 0 || slices.ContainsFunc(id.Datacenters, r.isDC) {
				add(acl.ServiceIdentityRules(id.ServiceName))
			}
		}
		for _, id := range nodes {
			if r.isDC(id.Datacenter) {
				add(acl.NodeIdentityRules(id.NodeName))
			}
		}
	}
	if res.management {
		res.authz = acl.ManageAll()
	} else {
		res.authz = acl.New(r.cfg.DefaultAllow, policies...)
	}
	return res, nil
}

func (r *aclResolver) isDC(dc string) bool { return strings.EqualFold(dc, r.dc) }

// replicaDown reports whether global tokens are to be judged by the down
// policy: this datacenter is a secondary whose replica is marked stale,
// and the policy is not to keep using it.
func (r *aclResolver) replicaDown() bool {
	switch r.cfg.DownPolicy {
	case DownPolicyDeny, DownPolicyAllow:
		return r.cfg.secondary(r.dc) && r.store.ACLReplicaStale()
	}
	return false
}

// authorize resolves the token of a request and returns its authorizer,
// nil when ACLs are off (every check passes then: see allowed).
func (c *Catalog) authorize(secret string) (authorizer, error) {
	res, err := c.acl.resolve(secret)
	if err != nil || res == nil {
		return nil, err
	}
	return res.authz, nil
}

// requireManagement refuses a token that may not manage ACLs: snapshots
// hold everything, ACL data included, so saving or restoring one takes a
// management token, as in Consul.
func (c *Catalog) requireManagement(secret string) error {
	authz, err := c.authorize(secret)
	if err != nil || authz == nil {
		return err
	}
	if !authz.ACLWrite() {
		return denied("acl", "write", "")
	}
	return nil
}

// denied is the error of a request its token may not make: it names the
// permission it lacks, wraps rpc.ErrPermissionDenied, and crosses the wire.
func denied(resource, access, segment string) error {
	// Worded as package acl words the agent's own refusals, so a user
	// sees one form whichever side refused.
	switch resource {
	case "operator", "acl", "keyring":
		return fmt.Errorf("%w: token lacks %s:%s", rpc.ErrPermissionDenied, resource, access)
	}
	return fmt.Errorf("%w: token lacks %s:%s on %q", rpc.ErrPermissionDenied, resource, access, segment)
}

// Checks on a possibly nil authorizer (ACLs off): nil allows everything.
func queryRead(a authorizer, name string) bool { return a == nil || a.QueryRead(name) }
func aclRead(a authorizer) bool                { return a == nil || a.ACLRead() }
func aclWrite(a authorizer) bool               { return a == nil || a.ACLWrite() }

// instanceReadable reports whether a may see an instance: its service and
// its node, as Consul's health endpoints filter.
func instanceReadable(a authorizer, inst catalog.ServiceInstance) bool {
	return a == nil || (a.ServiceRead(inst.Service.Service) && a.NodeRead(inst.Node.Node))
}

// checkReadable reports whether a may see a check: a service's check needs
// service:read, a node's node:read.
func checkReadable(a authorizer, c *catalog.Check) bool {
	if a == nil {
		return true
	}
	if c.ServiceName != "" {
		return a.ServiceRead(c.ServiceName)
	}
	return a.NodeRead(c.Node)
}

// filterChecks returns the checks a may read, all when a is nil.
func filterChecks(a authorizer, checks []*catalog.Check) []*catalog.Check {
	if a == nil {
		return checks
	}
	out := make([]*catalog.Check, 0, len(checks))
	for _, c := range checks {
		if checkReadable(a, c) {
			out = append(out, c)
		}
	}
	return out
}

// initACL makes sure the management policy and the anonymous token exist,
// and the initial management token when one is configured: its creation
// is the bootstrap (the same Raft write marks ACLs bootstrapped). The
// leader runs it when it takes office with ACLs enabled, and the
// Bootstrap endpoint before a bootstrap, so that no caller bootstraps
// ahead of the configured token. It writes only what is missing.
func (s *Server) initACL(ctx context.Context) error {
	store := s.store
	_, pol, err := store.ACLPolicy(nil, catalog.ManagementPolicyID, false)
	_, anon, err2 := store.ACLToken(nil, catalog.AnonymousTokenID, false)
	if err := errors.Join(err, err2); err != nil {
		return err
	}
	missing := pol == nil || anon == nil
	req := &catalog.ACLRequest{Op: catalog.ACLInit, Time: time.Now().UTC()}
	if secret := s.cfg.InitialManagement; secret != "" {
		hash := acl.HashSecret(secret)
		_, tok, err := store.ACLToken(nil, hash, true)
		if err != nil {
			return err
		}
		_, bootstrapped := store.ACLBootstrapped()
		missing = missing || tok == nil || !bootstrapped
		var id string
		if tok != nil {
			id = tok.AccessorID // exists: the FSM only marks the bootstrap
		} else if id, err = acl.NewID(); err != nil {
			return err
		}
		req.Token = &catalog.ACLToken{
			AccessorID: id, SecretHash: hash,
			Description: "Initial Management Token",
			Policies:    []catalog.ACLPolicyLink{{ID: catalog.ManagementPolicyID}},
			CreateTime:  req.Time,
		}
	}
	if !missing {
		return nil
	}
	return s.apply(ctx, cmdACL, req)
}

// reapExpiredTokens deletes the tokens whose ExpirationTime has passed:
// every server refuses them from that instant anyway (resolve), so this
// only frees their rows and their secrets. The leader runs it with each
// reconcile.
func (s *Server) reapExpiredTokens(ctx context.Context, now time.Time) error {
	_, toks, err := s.store.ACLTokens(nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range toks {
		if !t.Expired(now) {
			continue
		}
		err := s.apply(ctx, cmdACL, &catalog.ACLRequest{Op: catalog.ACLTokenDelete, Token: &catalog.ACLToken{AccessorID: t.AccessorID}})
		if err != nil && !errors.Is(err, catalog.ErrNotFound) {
			errs = append(errs, fmt.Errorf("reap expired token %s: %w", t.AccessorID, err))
		}
	}
	return errors.Join(errs...)
}
