package catalog

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"
)

// The catalog holds the ACL system's data (policies and tokens) beside the
// services they guard, in the same Raft log and snapshots, as Consul's
// state store does. It stores them; it does not interpret the rules
// (package acl does, on the servers).

// ACLPolicy is a named set of rules in Consul's rule language.
type ACLPolicy struct {
	ID          string // a UUID chosen by the server
	Name        string // unique, [A-Za-z0-9_-]{1,128}
	Description string
	Rules       string // HCL or JSON, parsed by package acl
	// Datacenters, when set, are the only datacenters the policy grants
	// anything in (Consul's); empty: every one.
	Datacenters []string
	RaftIndex
}

// AppliesIn reports whether the policy grants anything in datacenter dc.
func (p *ACLPolicy) AppliesIn(dc string) bool {
	return len(p.Datacenters) == 0 || slices.ContainsFunc(p.Datacenters, func(d string) bool { return strings.EqualFold(d, dc) })
}

// ACLPolicyLink names a policy a token holds. ID is what counts; Name is
// filled in when the token is read, from the policy as it is then.
type ACLPolicyLink struct {
	ID   string
	Name string
}

// ACLToken is a credential. The catalog never holds its secret, only the
// secret's hash: the secret is shown once, when the token is made, and a
// snapshot or a Raft log that leaks gives nobody a working token.
type ACLToken struct {
	AccessorID string // a UUID, public: how tokens are named and listed
	SecretHash string // hex SHA-256 of the secret ID
	// Secret is the secret ID in clear, kept only when the servers run
	// with acl.tokens_secret_readable (so that acl:write holders can read
	// it back, as in Consul); empty otherwise, the default.
	Secret            string
	Description       string
	Policies          []ACLPolicyLink
	Roles             []ACLRoleLink
	ServiceIdentities []ACLServiceIdentity
	NodeIdentities    []ACLNodeIdentity
	// Local tokens stay in the datacenter they were made in; the others
	// (global) are made in the primary datacenter and replicated to every
	// other one.
	Local      bool
	CreateTime time.Time
	// ExpirationTime, when set, is when the token stops working: from
	// then on it resolves as if it did not exist (Consul's semantics).
	// Set once, on create; zero means never.
	ExpirationTime time.Time
	RaftIndex
}

// Expired reports whether the token has expired at now.
func (t *ACLToken) Expired(now time.Time) bool {
	return !t.ExpirationTime.IsZero() && !now.Before(t.ExpirationTime)
}

// Well-known IDs, Consul's.
const (
	// ManagementPolicyID is the built-in policy granting everything.
	ManagementPolicyID = "00000000-0000-0000-0000-000000000001"
	// ManagementPolicyName is its name.
	ManagementPolicyName = "global-management"
	// ReadOnlyPolicyID is the built-in policy granting read of everything
	// (ACLs included), Consul's global-read-only.
	ReadOnlyPolicyID   = "00000000-0000-0000-0000-000000000002"
	ReadOnlyPolicyName = "global-read-only"
	// AnonymousTokenID is the accessor of the token used by requests that
	// carry none: its policies govern unauthenticated reads (and DNS, on
	// agents with neither acl.tokens.dns nor acl.tokens.default).
	AnonymousTokenID = "00000000-0000-0000-0000-000000000002"
)

// ACLOp is what an ACLRequest does.
type ACLOp string

// The operations on ACL data.
const (
	ACLPolicySet    ACLOp = "policy-set"    // create or replace Policy (by ID)
	ACLPolicyDelete ACLOp = "policy-delete" // delete Policy.ID
	ACLTokenSet     ACLOp = "token-set"     // create or replace Token (by AccessorID)
	ACLTokenDelete  ACLOp = "token-delete"  // delete Token.AccessorID
	// ACLBootstrap creates the management policy, the anonymous token and
	// Token (linked to the management policy), once: a second bootstrap
	// is refused with ErrACLBootstrapped, unless ResetIndex is the index
	// of the last one (Consul's reset procedure).
	ACLBootstrap ACLOp = "bootstrap"
	// ACLInit creates the management policy and the anonymous token when
	// they are missing, and Token too when it is set and missing; it never
	// replaces anything. The leader applies it when it takes office. Token
	// is acl.tokens.initial_management: as in Consul, it is the bootstrap,
	// so ACLInit with a Token marks ACLs bootstrapped when they were not.
	ACLInit       ACLOp = "init"
	ACLRoleSet    ACLOp = "role-set"    // create or replace Role (by ID)
	ACLRoleDelete ACLOp = "role-delete" // delete Role.ID
	// ACLReplicate makes this datacenter's policies, roles and global
	// tokens those of Replica, the primary datacenter's: what a secondary
	// datacenter's leader applies from its replication.
	ACLReplicate ACLOp = "replicate"
	// ACLReplicaStale marks (Stale) or clears the replica as out of date:
	// replication from the primary has failed for longer than
	// acl.token_ttl, and acl.down_policy decides about global tokens.
	ACLReplicaStale ACLOp = "replica-stale"
)

// ACLRequest changes ACL data: the command the Raft log carries. Servers
// validate it (and hash secrets) before it enters the log.
type ACLRequest struct {
	Op     ACLOp
	Policy *ACLPolicy
	Token  *ACLToken
	Role   *ACLRole
	// Replica is what ACLReplicate installs; Stale is ACLReplicaStale's.
	Replica *ACLReplica
	Stale   bool
	// Time is when the leader made the request: the creation time of
	// what ACLInit creates (the FSM must not read its own clock, or the
	// servers would disagree).
	Time time.Time
	// ResetIndex allows an ACLBootstrap after an earlier one: it must be
	// the index that bootstrap was made at (ACLBootstrapped), which an
	// operator gives the leader in its data dir. 0 for a first bootstrap.
	ResetIndex uint64
}

// ErrACLBootstrapped is wrapped by the refusal of a bootstrap after one
// was made (by `cairn acl bootstrap` or the initial management token);
// the refusal names the reset index, Consul's words.
var ErrACLBootstrapped = errors.New("ACL bootstrap no longer allowed")

// ACL tables.
const (
	tableACLPolicies = "acl-policies"
	tableACLTokens   = "acl-tokens"
	tableACLRoles    = "acl-roles"
	// aclBootstrapRow is a row of the index table whose Index is the Raft
	// index of the bootstrap: present once ACLs were bootstrapped.
	aclBootstrapRow = "acl-bootstrap"
)

// aclTables is the schema of the ACL tables.
func aclTables() map[string]*memdb.TableSchema {
	lower := func(field string) memdb.Indexer { return &memdb.StringFieldIndex{Field: field, Lowercase: true} }
	return map[string]*memdb.TableSchema{
		tableACLPolicies: {
			Name: tableACLPolicies,
			Indexes: map[string]*memdb.IndexSchema{
				"id":   {Name: "id", Unique: true, Indexer: lower("ID")},
				"name": {Name: "name", Unique: true, Indexer: lower("Name")},
			},
		},
		tableACLTokens: {
			Name: tableACLTokens,
			Indexes: map[string]*memdb.IndexSchema{
				"id":     {Name: "id", Unique: true, Indexer: lower("AccessorID")},
				"secret": {Name: "secret", Unique: true, Indexer: lower("SecretHash")},
			},
		},
		tableACLRoles: {
			Name: tableACLRoles,
			Indexes: map[string]*memdb.IndexSchema{
				"id":   {Name: "id", Unique: true, Indexer: lower("ID")},
				"name": {Name: "name", Unique: true, Indexer: lower("Name")},
			},
		},
	}
}

var policyName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ValidatePolicy checks the fields the catalog can judge (not the rules,
// which package acl parses): a *FieldError naming the first bad one.
func ValidatePolicy(p *ACLPolicy) error {
	if !IsQueryID(p.ID) {
		return fieldErr("ID", "must be a UUID, got %q", p.ID)
	}
	if !policyName.MatchString(p.Name) {
		return fieldErr("Name", "must be 1 to 128 letters, digits, '-' or '_', got %q", p.Name)
	}
	if len(p.Description) > 1024 {
		return fieldErr("Description", "at most 1024 bytes, got %d", len(p.Description))
	}
	return nil
}

// ValidateToken checks a token before it is written: a *FieldError naming
// the first bad field.
func ValidateToken(t *ACLToken) error {
	if !IsQueryID(t.AccessorID) {
		return fieldErr("AccessorID", "must be a UUID, got %q", t.AccessorID)
	}
	if len(t.SecretHash) != 64 && t.AccessorID != AnonymousTokenID {
		return fieldErr("SecretID", "is required")
	}
	if len(t.Description) > 1024 {
		return fieldErr("Description", "at most 1024 bytes, got %d", len(t.Description))
	}
	if len(t.Policies) > 64 {
		return fieldErr("Policies", "at most 64 policies, got %d", len(t.Policies))
	}
	return validateIdentities(len(t.Roles), t.ServiceIdentities, t.NodeIdentities)
}

// ApplyACL applies an ACLRequest at Raft index idx. A token linking to a
// policy that does not exist, or a policy whose name another holds, is a
// *FieldError; a delete of what does not exist wraps ErrNotFound. The
// management policy and the anonymous token cannot be deleted, and the
// management policy cannot be changed.
func (s *Store) ApplyACL(idx uint64, req *ACLRequest) error {
	st := s.state.Load()
	tx := st.db.Txn(true)
	defer tx.Abort()
	var err error
	switch req.Op {
	case ACLPolicySet:
		err = setPolicy(tx, idx, req.Policy)
	case ACLPolicyDelete:
		err = deletePolicy(tx, req.Policy)
	case ACLTokenSet:
		err = setToken(tx, idx, req.Token)
	case ACLTokenDelete:
		err = deleteToken(tx, req.Token)
	case ACLBootstrap:
		err = bootstrapACL(tx, idx, req.Token, req.ResetIndex)
	case ACLInit:
		err = initACL(tx, idx, req.Token, req.Time)
	case ACLRoleSet:
		err = setRole(tx, idx, req.Role)
	case ACLRoleDelete:
		err = deleteRole(tx, req.Role)
	case ACLReplicate:
		err = replicateACL(tx, idx, req.Replica)
	case ACLReplicaStale:
		err = markReplicaStale(tx, idx, req.Stale)
	default:
		err = fieldErr("Op", "unknown ACL operation %q", req.Op)
	}
	if err != nil {
		return err
	}
	if err := bumpIndex(tx, tableACLPolicies, idx); err != nil {
		return err
	}
	if err := bumpIndex(tx, tableACLTokens, idx); err != nil {
		return err
	}
	if err := bumpIndex(tx, tableACLRoles, idx); err != nil {
		return err
	}
	tx.Commit()
	// Who may read what has changed: every follower of the change feed
	// starts over, so caches filled under the old rules are refetched.
	st.changes.append(changeEntry{index: idx, acl: true})
	return nil
}

func setPolicy(tx *memdb.Txn, idx uint64, p *ACLPolicy) error {
	if p == nil {
		return fieldErr("Policy", "is required")
	}
	id := strings.ToLower(p.ID)
	if builtinPolicy(id) {
		return fieldErr("ID", "the built-in policy %s cannot be changed", id)
	}
	raw, err := tx.First(tableACLPolicies, "name", strings.ToLower(p.Name))
	if err != nil {
		return fmt.Errorf("look up policy %q: %w", p.Name, err)
	}
	if other, ok := raw.(*ACLPolicy); ok && other.ID != id {
		return fieldErr("Name", "policy %s has the name %q already", other.ID, p.Name)
	}
	cp := *p
	cp.ID = id
	cp.CreateIndex, cp.ModifyIndex = idx, idx
	if raw, err = tx.First(tableACLPolicies, "id", id); err == nil && raw != nil {
		cp.CreateIndex = raw.(*ACLPolicy).CreateIndex
	}
	if err := tx.Insert(tableACLPolicies, &cp); err != nil {
		return fmt.Errorf("insert policy %q: %w", id, err)
	}
	return nil
}

func deletePolicy(tx *memdb.Txn, p *ACLPolicy) error {
	if p == nil {
		return fieldErr("Policy", "is required")
	}
	id := strings.ToLower(p.ID)
	if builtinPolicy(id) {
		return fieldErr("ID", "the built-in policy %s cannot be deleted", id)
	}
	raw, err := tx.First(tableACLPolicies, "id", id)
	if err != nil || raw == nil {
		return fmt.Errorf("policy %q: %w", id, ErrNotFound)
	}
	return tx.Delete(tableACLPolicies, raw)
}

func setToken(tx *memdb.Txn, idx uint64, t *ACLToken) error {
	if t == nil {
		return fieldErr("Token", "is required")
	}
	cp := *t
	cp.AccessorID = strings.ToLower(t.AccessorID)
	cp.SecretHash = strings.ToLower(t.SecretHash)
	cp.Policies = make([]ACLPolicyLink, 0, len(t.Policies))
	for i, l := range t.Policies {
		raw, err := tx.First(tableACLPolicies, "id", strings.ToLower(l.ID))
		if err != nil || raw == nil {
			return fieldErr(fmt.Sprintf("Policies[%d]", i), "no policy with ID %q", l.ID)
		}
		cp.Policies = append(cp.Policies, ACLPolicyLink{ID: raw.(*ACLPolicy).ID})
	}
	roles, err := roleLinks(tx, t.Roles)
	if err != nil {
		return err
	}
	cp.Roles = roles
	raw, err := tx.First(tableACLTokens, "secret", cp.SecretHash)
	if err != nil {
		return fmt.Errorf("look up token: %w", err)
	}
	if other, ok := raw.(*ACLToken); ok && other.AccessorID != cp.AccessorID {
		return fieldErr("SecretID", "is taken by another token")
	}
	cp.CreateIndex, cp.ModifyIndex = idx, idx
	if raw, err = tx.First(tableACLTokens, "id", cp.AccessorID); err == nil && raw != nil {
		old := raw.(*ACLToken)
		cp.CreateIndex, cp.CreateTime = old.CreateIndex, old.CreateTime
	}
	if err := tx.Insert(tableACLTokens, &cp); err != nil {
		return fmt.Errorf("insert token %q: %w", cp.AccessorID, err)
	}
	return nil
}

func deleteToken(tx *memdb.Txn, t *ACLToken) error {
	if t == nil {
		return fieldErr("Token", "is required")
	}
	id := strings.ToLower(t.AccessorID)
	if id == AnonymousTokenID {
		return fieldErr("AccessorID", "the anonymous token cannot be deleted")
	}
	raw, err := tx.First(tableACLTokens, "id", id)
	if err != nil || raw == nil {
		return fmt.Errorf("token %q: %w", id, ErrNotFound)
	}
	return tx.Delete(tableACLTokens, raw)
}

// initACL creates what ACLs need to work and are missing: the management
// policy, the anonymous token (no policies: what it may do is the default
// policy's, until an operator gives it one), and t when set. t is the
// initial management token: its creation is the bootstrap, so ACLs are
// marked bootstrapped with it (also when t exists already, made by a
// release that did not mark it), and nobody can bootstrap after it.
func initACL(tx *memdb.Txn, idx uint64, t *ACLToken, now time.Time) error {
	for _, p := range builtinPolicies() {
		raw, err := tx.First(tableACLPolicies, "id", p.ID)
		if err != nil {
			return fmt.Errorf("look up built-in policy %s: %w", p.Name, err)
		}
		if raw != nil {
			continue
		}
		p.CreateIndex, p.ModifyIndex = idx, idx
		if err := tx.Insert(tableACLPolicies, p); err != nil {
			return fmt.Errorf("insert built-in policy %s: %w", p.Name, err)
		}
	}
	raw, err := tx.First(tableACLTokens, "id", AnonymousTokenID)
	if err != nil {
		return fmt.Errorf("look up anonymous token: %w", err)
	}
	if raw == nil {
		anon := &ACLToken{
			AccessorID: AnonymousTokenID, SecretHash: "anonymous",
			Description: "Anonymous Token", CreateTime: now,
			RaftIndex: RaftIndex{CreateIndex: idx, ModifyIndex: idx},
		}
		if err := tx.Insert(tableACLTokens, anon); err != nil {
			return fmt.Errorf("insert anonymous token: %w", err)
		}
	}
	if t == nil {
		return nil
	}
	if err := markBootstrapped(tx, idx); err != nil {
		return err
	}
	if raw, err = tx.First(tableACLTokens, "id", strings.ToLower(t.AccessorID)); err == nil && raw != nil {
		return nil
	}
	if raw, err = tx.First(tableACLTokens, "secret", strings.ToLower(t.SecretHash)); err == nil && raw != nil {
		return nil
	}
	return setToken(tx, idx, t)
}

// markBootstrapped records idx as the bootstrap's index unless one is
// recorded already.
func markBootstrapped(tx *memdb.Txn, idx uint64) error {
	raw, err := tx.First(tableIndex, "id", aclBootstrapRow)
	if err != nil {
		return fmt.Errorf("look up bootstrap: %w", err)
	}
	if raw != nil {
		return nil
	}
	return tx.Insert(tableIndex, &indexRow{Table: aclBootstrapRow, Index: idx})
}

// ManagementRules are the rules stored in the management policy. Servers
// recognise the policy by its ID, not by these rules: they are there for
// people reading it.
const ManagementRules = `acl = "write"
operator = "write"
keyring = "write"
service_prefix "" { policy = "write" }
node_prefix "" { policy = "write" }
agent_prefix "" { policy = "write" }
query_prefix "" { policy = "write" }
key_prefix "" { policy = "write" }
session_prefix "" { policy = "write" }
`

func bootstrapACL(tx *memdb.Txn, idx uint64, t *ACLToken, resetIndex uint64) error {
	raw, err := tx.First(tableIndex, "id", aclBootstrapRow)
	if err != nil {
		return fmt.Errorf("look up bootstrap: %w", err)
	}
	if raw != nil {
		if err := CheckBootstrapReset(raw.(*indexRow).Index, resetIndex); err != nil {
			return err
		}
	}
	if t == nil {
		return fieldErr("Token", "is required")
	}
	if err := initACL(tx, idx, nil, t.CreateTime); err != nil {
		return err
	}
	cp := *t
	cp.Policies = []ACLPolicyLink{{ID: ManagementPolicyID}}
	if err := setToken(tx, idx, &cp); err != nil {
		return err
	}
	return tx.Insert(tableIndex, &indexRow{Table: aclBootstrapRow, Index: idx})
}

// CheckBootstrapReset says whether a bootstrap with resetIndex may follow
// the one made at index done: only with resetIndex equal to done. The
// refusal wraps ErrACLBootstrapped and names done, the index an operator
// writes into the leader's acl-bootstrap-reset file to allow one more.
func CheckBootstrapReset(done, resetIndex uint64) error {
	switch resetIndex {
	case done:
		return nil
	case 0:
		return fmt.Errorf("%w (reset index: %d)", ErrACLBootstrapped, done)
	}
	return fmt.Errorf("%w: invalid bootstrap reset index (specified %d, reset index: %d)", ErrACLBootstrapped, resetIndex, done)
}

// ACLIndex is the Raft index of the last change to ACL data: what a cache
// of resolved tokens compares to know it is current.
func (s *Store) ACLIndex() uint64 {
	return maxIndex(s.read(nil), aclTableNames...)
}

// aclTableNames are the ACL tables, whose index rows move together.
var aclTableNames = []string{tableACLPolicies, tableACLTokens, tableACLRoles}

// ACLPolicies returns every policy, sorted by name, and the index of the
// ACL tables.
func (s *Store) ACLPolicies(ws WatchSet) (uint64, []*ACLPolicy, error) {
	tx := s.read(ws)
	it, err := tx.Get(tableACLPolicies, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("list policies: %w", err)
	}
	ws.Add(it.WatchCh())
	var out []*ACLPolicy
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*ACLPolicy))
	}
	slices.SortFunc(out, func(a, b *ACLPolicy) int { return cmp.Compare(a.Name, b.Name) })
	return maxIndex(tx, aclTableNames...), out, nil
}

// ACLPolicy returns the policy with the given ID, or with the given name
// when byName, or nil when there is none.
func (s *Store) ACLPolicy(ws WatchSet, key string, byName bool) (uint64, *ACLPolicy, error) {
	index := "id"
	if byName {
		index = "name"
	}
	tx := s.read(ws)
	ch, raw, err := tx.FirstWatch(tableACLPolicies, index, strings.ToLower(key))
	if err != nil {
		return 0, nil, fmt.Errorf("look up policy %q: %w", key, err)
	}
	ws.Add(ch)
	p, _ := raw.(*ACLPolicy)
	return maxIndex(tx, aclTableNames...), p, nil
}

// ACLTokens returns every token, sorted by accessor ID, and the index of
// the ACL tables.
func (s *Store) ACLTokens(ws WatchSet) (uint64, []*ACLToken, error) {
	tx := s.read(ws)
	it, err := tx.Get(tableACLTokens, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("list tokens: %w", err)
	}
	ws.Add(it.WatchCh())
	var out []*ACLToken
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*ACLToken))
	}
	return maxIndex(tx, aclTableNames...), out, nil
}

// ACLToken returns the token with the given accessor ID, or with the
// given secret hash when bySecret, or nil when there is none.
func (s *Store) ACLToken(ws WatchSet, key string, bySecret bool) (uint64, *ACLToken, error) {
	index := "id"
	if bySecret {
		index = "secret"
	}
	tx := s.read(ws)
	ch, raw, err := tx.FirstWatch(tableACLTokens, index, strings.ToLower(key))
	if err != nil {
		return 0, nil, fmt.Errorf("look up token: %w", err)
	}
	ws.Add(ch)
	t, _ := raw.(*ACLToken)
	return maxIndex(tx, aclTableNames...), t, nil
}

// ACLBootstrapped reports whether ACLs were bootstrapped, and at which
// index.
func (s *Store) ACLBootstrapped() (uint64, bool) {
	raw, err := s.read(nil).First(tableIndex, "id", aclBootstrapRow)
	if err != nil || raw == nil {
		return 0, false
	}
	return raw.(*indexRow).Index, true
}
