package rpc

import (
	"errors"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// This file holds the wire types of the ACL endpoint, which package
// consensus serves: tokens and policies, and the resolution of a token
// into the rules it carries, for agents that enforce their own endpoints.

// ACLEndpoint is the name the ACL endpoint is registered under.
const ACLEndpoint = "ACL"

// The methods of the ACL endpoint.
const (
	MethodACLBootstrap    = ACLEndpoint + ".Bootstrap"
	MethodACLPolicySet    = ACLEndpoint + ".PolicySet"
	MethodACLPolicyDelete = ACLEndpoint + ".PolicyDelete"
	MethodACLPolicyRead   = ACLEndpoint + ".PolicyRead"
	MethodACLPolicyList   = ACLEndpoint + ".PolicyList"
	MethodACLTokenSet     = ACLEndpoint + ".TokenSet"
	MethodACLTokenDelete  = ACLEndpoint + ".TokenDelete"
	MethodACLTokenRead    = ACLEndpoint + ".TokenRead"
	MethodACLTokenList    = ACLEndpoint + ".TokenList"
	MethodACLResolve      = ACLEndpoint + ".Resolve"
	MethodACLRoleSet      = ACLEndpoint + ".RoleSet"
	MethodACLRoleDelete   = ACLEndpoint + ".RoleDelete"
	MethodACLRoleRead     = ACLEndpoint + ".RoleRead"
	MethodACLRoleList     = ACLEndpoint + ".RoleList"
	// MethodACLReplica is what a secondary datacenter's leader reads the
	// primary's ACL data with (a blocking query).
	MethodACLReplica           = ACLEndpoint + ".Replica"
	MethodACLReplicationStatus = ACLEndpoint + ".ReplicationStatus"
)

// ErrPermissionDenied is wrapped by the error of a request its token may
// not make. It crosses the wire, so an HTTP handler answers 403 whichever
// server refused.
//
//lint:ignore ST1005 Consul's clients and users know this text.
var ErrPermissionDenied = errors.New("Permission denied")

// ErrACLNotFound is wrapped by the error of a request whose token is not
// known: Consul's "ACL not found", a 403 too.
var ErrACLNotFound = errors.New("ACL not found")

// ErrACLDisabled is wrapped by the error of an ACL endpoint called on a
// server with ACLs off.
var ErrACLDisabled = errors.New("ACL support disabled")

// ACLBootstrapRequest makes the first management token, once.
type ACLBootstrapRequest struct {
	WriteRequest
	// Secret is the secret ID the bootstrap token gets, a UUID; empty
	// lets the server choose one (Consul's BootstrapSecret).
	Secret    string
	Forwarded bool
}

// ACLPolicySetRequest creates (Policy.ID empty) or replaces a policy.
type ACLPolicySetRequest struct {
	WriteRequest
	Policy    catalog.ACLPolicy
	Forwarded bool
}

// ACLPolicyResponse holds one policy, nil when there is none.
type ACLPolicyResponse struct {
	QueryMeta
	Policy *catalog.ACLPolicy
}

// ACLPolicyDeleteRequest deletes the policy with ID.
type ACLPolicyDeleteRequest struct {
	WriteRequest
	ID        string
	Forwarded bool
}

// ACLPolicyReadRequest reads the policy with ID, or with Name when ID is
// empty.
type ACLPolicyReadRequest struct {
	QueryOptions
	ID, Name  string
	Forwarded bool
}

// ACLPolicyListRequest lists every policy.
type ACLPolicyListRequest struct {
	QueryOptions
	Forwarded bool
}

// ACLPoliciesResponse holds policies, sorted by name.
type ACLPoliciesResponse struct {
	QueryMeta
	Policies []*catalog.ACLPolicy
}

// ACLTokenSpec is a token as a client writes it: its secret in clear (the
// server hashes it before it enters the log), policies by ID or by name.
// Empty AccessorID and SecretID are chosen by the server on create.
type ACLTokenSpec struct {
	AccessorID  string
	SecretID    string
	Description string
	Policies    []catalog.ACLPolicyLink
	// Roles may be named by ID or by name, as Policies.
	Roles             []catalog.ACLRoleLink
	ServiceIdentities []catalog.ACLServiceIdentity
	NodeIdentities    []catalog.ACLNodeIdentity
	Local             bool
	// ExpirationTTL (from now) or ExpirationTime makes the token expire;
	// at most one of them, on create only. Zero: never.
	ExpirationTTL  time.Duration
	ExpirationTime time.Time
}

// ACLTokenSetRequest creates a token, or updates the one with
// Spec.AccessorID when Update is set (its secret cannot change then).
// (Not named Token: WriteRequest.Token is the request's own.)
type ACLTokenSetRequest struct {
	WriteRequest
	Spec   ACLTokenSpec
	Update bool
	// CloneFrom, when set, makes a new token with the links, identities,
	// locality and expiry of the token with that accessor ID; of Spec only
	// Description counts (empty: the source's).
	CloneFrom string
	Forwarded bool
}

// ACLTokenView is a token as the servers show it. SecretID is set only in
// the answer to the request that made the token, and to a token's own
// holder (TokenRead with Self): the servers keep only its hash.
type ACLTokenView struct {
	AccessorID        string
	SecretID          string
	Description       string
	Policies          []catalog.ACLPolicyLink
	Roles             []catalog.ACLRoleLink
	ServiceIdentities []catalog.ACLServiceIdentity
	NodeIdentities    []catalog.ACLNodeIdentity
	Local             bool
	CreateTime        time.Time
	// ExpirationTime is when the token stops working; zero: never.
	ExpirationTime time.Time
	catalog.RaftIndex
}

// ACLTokenResponse holds one token, nil when there is none.
type ACLTokenResponse struct {
	QueryMeta
	Token *ACLTokenView
}

// ACLTokenDeleteRequest deletes the token with AccessorID.
type ACLTokenDeleteRequest struct {
	WriteRequest
	AccessorID string
	Forwarded  bool
}

// ACLTokenReadRequest reads the token with AccessorID, or with Self the
// token the request is made with.
type ACLTokenReadRequest struct {
	QueryOptions
	AccessorID string
	Self       bool
	Forwarded  bool
}

// ACLTokenListRequest lists every token, or with one filter set those
// linking to Policy, linking to Role, with a service identity for
// ServiceName, or made by AuthMethod (none: cairn has no auth methods).
type ACLTokenListRequest struct {
	QueryOptions
	Policy, Role, ServiceName, AuthMethod string
	Forwarded                             bool
}

// ACLRoleSetRequest creates (Role.ID empty) or replaces a role; its
// policies may be named by ID or by name.
type ACLRoleSetRequest struct {
	WriteRequest
	Role      catalog.ACLRole
	Forwarded bool
}

// ACLRoleResponse holds one role.
type ACLRoleResponse struct {
	QueryMeta
	Role *catalog.ACLRole
}

// ACLRoleDeleteRequest deletes the role with ID.
type ACLRoleDeleteRequest struct {
	WriteRequest
	ID        string
	Forwarded bool
}

// ACLRoleReadRequest reads the role with ID, or with Name when ID is
// empty.
type ACLRoleReadRequest struct {
	QueryOptions
	ID, Name  string
	Forwarded bool
}

// ACLRoleListRequest lists every role, or those linking to Policy.
type ACLRoleListRequest struct {
	QueryOptions
	Policy    string
	Forwarded bool
}

// ACLRolesResponse holds roles, sorted by name.
type ACLRolesResponse struct {
	QueryMeta
	Roles []*catalog.ACLRole
}

// ACLReplicaRequest reads the ACL data a secondary datacenter copies: a
// blocking query on the primary's ACL index.
type ACLReplicaRequest struct {
	QueryOptions
	Forwarded bool
}

// ACLReplicaResponse is the primary's ACL data at QueryMeta.Index.
type ACLReplicaResponse struct {
	QueryMeta
	Replica catalog.ACLReplica
}

// ACLReplicationStatusRequest asks the leader how its datacenter's ACL
// replication goes.
type ACLReplicationStatusRequest struct {
	QueryOptions
	Forwarded bool
}

// ACLReplicationStatus is Consul's shape of /v1/acl/replication.
type ACLReplicationStatus struct {
	Enabled              bool
	Running              bool
	SourceDatacenter     string
	ReplicationType      string // "policies" or "tokens"
	ReplicatedIndex      uint64
	ReplicatedRoleIndex  uint64
	ReplicatedTokenIndex uint64
	LastSuccess          time.Time
	LastError            time.Time
	LastErrorMessage     string
}

// ACLTokensResponse holds tokens, sorted by accessor ID.
type ACLTokensResponse struct {
	QueryMeta
	Tokens []*ACLTokenView
}

// ACLResolveRequest asks what the request's own token (QueryOptions.Token)
// may do, for an agent enforcing its own endpoints.
type ACLResolveRequest struct {
	QueryOptions
}

// ACLResolveResponse is a token resolved: the rules of its policies, to
// compile with package acl. Enabled false means ACLs are off: allow all.
type ACLResolveResponse struct {
	Enabled      bool
	DefaultAllow bool
	AccessorID   string
	Management   bool
	Rules        []string
	// Index is the index of the ACL data the answer reflects.
	Index uint64
	// ExpirationTime is when the token stops working (zero: never): an
	// agent keeps the answer no longer than that.
	ExpirationTime time.Time
}
