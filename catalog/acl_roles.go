package catalog

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/hashicorp/go-memdb"
)

// ACLRole is a named set of policies and identities that tokens link to,
// as Consul's roles: a change to the role changes what every token
// linking to it may do.
type ACLRole struct {
	ID                string // a UUID chosen by the server
	Name              string // unique, as a policy's name
	Description       string
	Policies          []ACLPolicyLink
	ServiceIdentities []ACLServiceIdentity
	NodeIdentities    []ACLNodeIdentity
	RaftIndex
}

// ACLRoleLink names a role a token holds; ID counts, Name is filled in on
// reads.
type ACLRoleLink struct {
	ID   string
	Name string
}

// ACLServiceIdentity grants what an instance of ServiceName needs (write
// on the service and its sidecar, read of services and nodes to discover
// others), in Datacenters, or every datacenter when empty: Consul's
// synthetic policy.
type ACLServiceIdentity struct {
	ServiceName string
	Datacenters []string
}

// ACLNodeIdentity grants what the agent of NodeName needs (write on its
// node, read of services) in Datacenter: Consul's synthetic policy.
type ACLNodeIdentity struct {
	NodeName   string
	Datacenter string
}

// ACLReplica is the ACL data a secondary datacenter copies from the
// primary: every policy and role, and the global tokens (none when token
// replication is off). Index is the primary's ACL index it was read at.
type ACLReplica struct {
	Index    uint64
	Policies []*ACLPolicy
	Roles    []*ACLRole
	Tokens   []*ACLToken
	// WithTokens says Tokens is the whole set of global tokens: those the
	// replica lacks are deleted. False leaves tokens alone.
	WithTokens bool
}

// aclReplicaStaleRow is a row of the index table present while the
// replica is marked stale; its Index is when it was marked.
const aclReplicaStaleRow = "acl-replica-stale"

// ReadOnlyRules are the rules of the built-in global-read-only policy.
const ReadOnlyRules = `acl = "read"
operator = "read"
keyring = "read"
service_prefix "" { policy = "read" }
node_prefix "" { policy = "read" }
agent_prefix "" { policy = "read" }
query_prefix "" { policy = "read" }
key_prefix "" { policy = "read" }
session_prefix "" { policy = "read" }
`

// builtinPolicies are the policies every cluster has, with Consul's IDs
// and names.
func builtinPolicies() []*ACLPolicy {
	return []*ACLPolicy{
		{ID: ManagementPolicyID, Name: ManagementPolicyName, Description: "Builtin Policy that grants unlimited access", Rules: ManagementRules},
		{ID: ReadOnlyPolicyID, Name: ReadOnlyPolicyName, Description: "Builtin Policy that grants unlimited read-only access to all components", Rules: ReadOnlyRules},
	}
}

func builtinPolicy(id string) bool { return id == ManagementPolicyID || id == ReadOnlyPolicyID }

var identityName = policyName

// validateIdentities checks the identities of a token or a role.
func validateIdentities(roles int, svc []ACLServiceIdentity, nodes []ACLNodeIdentity) error {
	if roles > 64 {
		return fieldErr("Roles", "at most 64 roles, got %d", roles)
	}
	if len(svc)+len(nodes) > 64 {
		return fieldErr("ServiceIdentities", "at most 64 identities, got %d", len(svc)+len(nodes))
	}
	for i, s := range svc {
		if !identityName.MatchString(s.ServiceName) {
			return fieldErr(fmt.Sprintf("ServiceIdentities[%d].ServiceName", i), "must be 1 to 128 letters, digits, '-' or '_', got %q", s.ServiceName)
		}
	}
	for i, n := range nodes {
		if !identityName.MatchString(n.NodeName) {
			return fieldErr(fmt.Sprintf("NodeIdentities[%d].NodeName", i), "must be 1 to 128 letters, digits, '-' or '_', got %q", n.NodeName)
		}
		if n.Datacenter == "" {
			return fieldErr(fmt.Sprintf("NodeIdentities[%d].Datacenter", i), "is required")
		}
	}
	return nil
}

// ValidateRole checks a role before it is written: a *FieldError naming
// the first bad field.
func ValidateRole(r *ACLRole) error {
	if !IsQueryID(r.ID) {
		return fieldErr("ID", "must be a UUID, got %q", r.ID)
	}
	if !policyName.MatchString(r.Name) {
		return fieldErr("Name", "must be 1 to 128 letters, digits, '-' or '_', got %q", r.Name)
	}
	if len(r.Description) > 1024 {
		return fieldErr("Description", "at most 1024 bytes, got %d", len(r.Description))
	}
	if len(r.Policies) > 64 {
		return fieldErr("Policies", "at most 64 policies, got %d", len(r.Policies))
	}
	return validateIdentities(0, r.ServiceIdentities, r.NodeIdentities)
}

// roleLinks checks that every role linked exists, and returns the links by
// lowercased ID.
func roleLinks(tx *memdb.Txn, in []ACLRoleLink) ([]ACLRoleLink, error) {
	out := make([]ACLRoleLink, 0, len(in))
	for i, l := range in {
		raw, err := tx.First(tableACLRoles, "id", strings.ToLower(l.ID))
		if err != nil || raw == nil {
			return nil, fieldErr(fmt.Sprintf("Roles[%d]", i), "no role with ID %q", l.ID)
		}
		out = append(out, ACLRoleLink{ID: raw.(*ACLRole).ID})
	}
	return out, nil
}

func setRole(tx *memdb.Txn, idx uint64, r *ACLRole) error {
	if r == nil {
		return fieldErr("Role", "is required")
	}
	cp := *r
	cp.ID = strings.ToLower(r.ID)
	raw, err := tx.First(tableACLRoles, "name", strings.ToLower(r.Name))
	if err != nil {
		return fmt.Errorf("look up role %q: %w", r.Name, err)
	}
	if other, ok := raw.(*ACLRole); ok && other.ID != cp.ID {
		return fieldErr("Name", "role %s has the name %q already", other.ID, r.Name)
	}
	cp.Policies = make([]ACLPolicyLink, 0, len(r.Policies))
	for i, l := range r.Policies {
		raw, err := tx.First(tableACLPolicies, "id", strings.ToLower(l.ID))
		if err != nil || raw == nil {
			return fieldErr(fmt.Sprintf("Policies[%d]", i), "no policy with ID %q", l.ID)
		}
		cp.Policies = append(cp.Policies, ACLPolicyLink{ID: raw.(*ACLPolicy).ID})
	}
	cp.CreateIndex, cp.ModifyIndex = idx, idx
	if raw, err = tx.First(tableACLRoles, "id", cp.ID); err == nil && raw != nil {
		cp.CreateIndex = raw.(*ACLRole).CreateIndex
	}
	if err := tx.Insert(tableACLRoles, &cp); err != nil {
		return fmt.Errorf("insert role %q: %w", cp.ID, err)
	}
	return nil
}

func deleteRole(tx *memdb.Txn, r *ACLRole) error {
	if r == nil {
		return fieldErr("Role", "is required")
	}
	raw, err := tx.First(tableACLRoles, "id", strings.ToLower(r.ID))
	if err != nil || raw == nil {
		return fmt.Errorf("role %q: %w", r.ID, ErrNotFound)
	}
	return tx.Delete(tableACLRoles, raw)
}

// replicateACL makes this store's policies, roles and (with WithTokens)
// global tokens those of rep: what rep lacks is deleted first (so a name
// or secret that moved to another ID does not collide), then what differs
// is written; rows equal to rep's keep their indexes. Local tokens are
// never touched.
func replicateACL(tx *memdb.Txn, idx uint64, rep *ACLReplica) error {
	if rep == nil {
		return fieldErr("Replica", "is required")
	}
	policies := make(map[string]bool, len(rep.Policies))
	for _, p := range rep.Policies {
		policies[strings.ToLower(p.ID)] = true
	}
	roles := make(map[string]bool, len(rep.Roles))
	for _, r := range rep.Roles {
		roles[strings.ToLower(r.ID)] = true
	}
	tokens := make(map[string]bool, len(rep.Tokens))
	for _, t := range rep.Tokens {
		tokens[strings.ToLower(t.AccessorID)] = true
	}
	if err := deleteRowsNotIn(tx, tableACLPolicies, func(raw any) bool { return policies[raw.(*ACLPolicy).ID] }); err != nil {
		return err
	}
	if err := deleteRowsNotIn(tx, tableACLRoles, func(raw any) bool { return roles[raw.(*ACLRole).ID] }); err != nil {
		return err
	}
	if rep.WithTokens {
		keep := func(raw any) bool { t := raw.(*ACLToken); return t.Local || tokens[t.AccessorID] }
		if err := deleteRowsNotIn(tx, tableACLTokens, keep); err != nil {
			return err
		}
	}
	for _, p := range rep.Policies {
		cp := *p
		cp.ID = strings.ToLower(p.ID)
		if !changed(tx, tableACLPolicies, cp.ID, &cp) {
			continue
		}
		cp.CreateIndex, cp.ModifyIndex = idx, idx
		if err := tx.Insert(tableACLPolicies, &cp); err != nil {
			return fmt.Errorf("replicate policy %s: %w", cp.ID, err)
		}
	}
	for _, r := range rep.Roles {
		if !changed(tx, tableACLRoles, strings.ToLower(r.ID), r) {
			continue
		}
		if err := setRole(tx, idx, r); err != nil {
			return fmt.Errorf("replicate role %s: %w", r.ID, err)
		}
	}
	for _, t := range rep.Tokens {
		if t.Local || !rep.WithTokens {
			continue
		}
		if !changed(tx, tableACLTokens, strings.ToLower(t.AccessorID), t) {
			continue
		}
		if raw, _ := tx.First(tableACLTokens, "id", strings.ToLower(t.AccessorID)); raw != nil && raw.(*ACLToken).Local {
			return fieldErr("Tokens", "global token %s has the accessor ID of a local token", t.AccessorID)
		}
		if err := setToken(tx, idx, t); err != nil {
			return fmt.Errorf("replicate token %s: %w", t.AccessorID, err)
		}
	}
	return nil
}

// changed reports whether the row of table with id differs from want,
// Raft indexes aside.
func changed[T any](tx *memdb.Txn, table, id string, want *T) bool {
	raw, err := tx.First(table, "id", id)
	if err != nil || raw == nil {
		return true
	}
	have := *(raw.(*T))
	w := *want
	zeroIndex(&have)
	zeroIndex(&w)
	return !reflect.DeepEqual(have, w)
}

func zeroIndex(v any) {
	switch x := v.(type) {
	case *ACLPolicy:
		x.RaftIndex, x.ID = RaftIndex{}, strings.ToLower(x.ID)
		x.Datacenters = nilIfEmpty(x.Datacenters)
	case *ACLRole:
		x.RaftIndex, x.ID = RaftIndex{}, strings.ToLower(x.ID)
		x.Policies, x.ServiceIdentities, x.NodeIdentities = nilIfEmpty(x.Policies), nilIfEmpty(x.ServiceIdentities), nilIfEmpty(x.NodeIdentities)
	case *ACLToken:
		x.RaftIndex, x.AccessorID = RaftIndex{}, strings.ToLower(x.AccessorID)
		x.Policies, x.Roles = nilIfEmpty(x.Policies), nilIfEmpty(x.Roles)
		x.ServiceIdentities, x.NodeIdentities = nilIfEmpty(x.ServiceIdentities), nilIfEmpty(x.NodeIdentities)
	}
}

// nilIfEmpty makes an empty slice nil: the wire does not tell them apart.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func deleteRowsNotIn(tx *memdb.Txn, table string, keep func(any) bool) error {
	it, err := tx.Get(table, "id")
	if err != nil {
		return fmt.Errorf("list %s: %w", table, err)
	}
	var drop []any
	for raw := it.Next(); raw != nil; raw = it.Next() {
		if !keep(raw) {
			drop = append(drop, raw)
		}
	}
	for _, raw := range drop {
		if err := tx.Delete(table, raw); err != nil {
			return fmt.Errorf("delete from %s: %w", table, err)
		}
	}
	return nil
}

func markReplicaStale(tx *memdb.Txn, idx uint64, stale bool) error {
	raw, err := tx.First(tableIndex, "id", aclReplicaStaleRow)
	if err != nil {
		return fmt.Errorf("look up replica mark: %w", err)
	}
	switch {
	case stale && raw == nil:
		return tx.Insert(tableIndex, &indexRow{Table: aclReplicaStaleRow, Index: idx})
	case !stale && raw != nil:
		return tx.Delete(tableIndex, raw)
	}
	return nil
}

// ACLReplicaStale reports whether this datacenter's copy of the primary's
// ACL data is marked out of date (ACLReplicaStale).
func (s *Store) ACLReplicaStale() bool {
	raw, err := s.read(nil).First(tableIndex, "id", aclReplicaStaleRow)
	return err == nil && raw != nil
}

// ACLRoles returns every role, sorted by name, and the ACL index.
func (s *Store) ACLRoles(ws WatchSet) (uint64, []*ACLRole, error) {
	tx := s.read(ws)
	it, err := tx.Get(tableACLRoles, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("list roles: %w", err)
	}
	ws.Add(it.WatchCh())
	var out []*ACLRole
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*ACLRole))
	}
	slices.SortFunc(out, func(a, b *ACLRole) int { return cmp.Compare(a.Name, b.Name) })
	return maxIndex(tx, aclTableNames...), out, nil
}

// ACLRole returns the role with the given ID, or name when byName, or nil.
func (s *Store) ACLRole(ws WatchSet, key string, byName bool) (uint64, *ACLRole, error) {
	index := "id"
	if byName {
		index = "name"
	}
	tx := s.read(ws)
	ch, raw, err := tx.FirstWatch(tableACLRoles, index, strings.ToLower(key))
	if err != nil {
		return 0, nil, fmt.Errorf("look up role %q: %w", key, err)
	}
	ws.Add(ch)
	r, _ := raw.(*ACLRole)
	return maxIndex(tx, aclTableNames...), r, nil
}
