package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// requestToken is the token a request carries, as Consul's clients send
// it: the X-Consul-Token header, else an "Authorization: Bearer" one.
// Tokens in the query string are not taken: they end up in access logs.
func requestToken(r *http.Request) string {
	if t := r.Header.Get("X-Consul-Token"); t != "" {
		return strings.TrimSpace(t)
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return ""
}

// authorizer is what the request's token may do on this agent; nil when
// ACLs are off (every check passes).
func (s *Server) authorizer(r *http.Request) (*acl.Authorizer, error) {
	if s.deps.Authorizer == nil {
		return nil, nil
	}
	return s.deps.Authorizer(r.Context())
}

// permission checks one permission of the request's token for an endpoint
// the agent answers itself; allowed is called only when ACLs are on.
func (s *Server) permission(r *http.Request, resource, access, segment string, allowed func(*acl.Authorizer) bool) error {
	authz, err := s.authorizer(r)
	if err != nil || authz == nil {
		return err
	}
	if !allowed(authz) {
		return acl.Denied(resource, access, segment)
	}
	return nil
}

// aclJSONToken is a token in Consul's JSON shape.
type aclJSONToken struct {
	AccessorID        string
	SecretID          string `json:",omitempty"`
	Description       string
	Policies          []aclJSONLink                `json:",omitempty"`
	Roles             []aclJSONLink                `json:",omitempty"`
	ServiceIdentities []catalog.ACLServiceIdentity `json:",omitempty"`
	NodeIdentities    []catalog.ACLNodeIdentity    `json:",omitempty"`
	Local             bool
	CreateTime        time.Time
	// ExpirationTime is when the token stops working; absent: never.
	ExpirationTime *time.Time `json:",omitempty"`
	Hash           []byte     `json:",omitempty"`
	CreateIndex    uint64
	ModifyIndex    uint64
}

type aclJSONLink struct {
	ID   string `json:",omitempty"`
	Name string `json:",omitempty"`
}

func tokenJSON(v *rpc.ACLTokenView) aclJSONToken {
	out := aclJSONToken{
		AccessorID: v.AccessorID, SecretID: v.SecretID, Description: v.Description, Local: v.Local,
		CreateTime: v.CreateTime, CreateIndex: v.CreateIndex, ModifyIndex: v.ModifyIndex,
	}
	for _, l := range v.Policies {
		out.Policies = append(out.Policies, aclJSONLink(l))
	}
	for _, l := range v.Roles {
		out.Roles = append(out.Roles, aclJSONLink(l))
	}
	out.ServiceIdentities, out.NodeIdentities = v.ServiceIdentities, v.NodeIdentities
	if !v.ExpirationTime.IsZero() {
		e := v.ExpirationTime
		out.ExpirationTime = &e
	}
	return out
}

// aclJSONPolicy is a policy in Consul's JSON shape.
type aclJSONPolicy struct {
	ID          string
	Name        string
	Description string
	Rules       string   `json:",omitempty"`
	Datacenters []string `json:",omitempty"`
	CreateIndex uint64
	ModifyIndex uint64
}

func policyJSON(p *catalog.ACLPolicy, withRules bool) aclJSONPolicy {
	out := aclJSONPolicy{ID: p.ID, Name: p.Name, Description: p.Description, Datacenters: p.Datacenters, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
	if withRules {
		out.Rules = p.Rules
	}
	return out
}

// requireACL refuses the /v1/acl/ endpoints of an agent without ACLs, as
// the servers would.
func (s *Server) requireACL() error {
	if s.deps.Authorizer == nil {
		return rpc.ErrACLDisabled
	}
	return nil
}

// PUT /v1/acl/bootstrap: the first management token, once.
func (s *Server) aclBootstrap(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	// The body is optional: Consul's clients send none, or a
	// BootstrapSecret to choose the token's secret.
	var body struct{ BootstrapSecret string }
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		return badRequest("body", "%v", err)
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			return badRequest("body", "invalid JSON: %v", err)
		}
	}
	var reply rpc.ACLTokenResponse
	if err := s.door.RPC(r.Context(), rpc.MethodACLBootstrap, &rpc.ACLBootstrapRequest{Secret: body.BootstrapSecret}, &reply); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tokenJSON(reply.Token))
	return nil
}

// aclPolicyBody is a policy as clients send it; Consul's Hash is
// accepted and ignored (it is the server's to compute).
type aclPolicyBody struct {
	ID          string
	Name        string
	Description string
	Rules       string
	Datacenters []string
}

// PUT /v1/acl/policy creates; PUT /v1/acl/policy/{id} updates; GET reads;
// DELETE deletes.
func (s *Server) aclPolicyCreate(w http.ResponseWriter, r *http.Request) error {
	return s.aclPolicyWrite(w, r, "")
}

func (s *Server) aclPolicyItem(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	id := r.PathValue("id")
	switch r.Method {
	case http.MethodPut:
		return s.aclPolicyWrite(w, r, id)
	case http.MethodDelete:
		if err := s.door.RPC(r.Context(), rpc.MethodACLPolicyDelete, &rpc.ACLPolicyDeleteRequest{ID: id}, nil); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, true)
		return nil
	}
	return s.aclPolicyRead(w, r, id, "")
}

func (s *Server) aclPolicyByName(w http.ResponseWriter, r *http.Request) error {
	return s.aclPolicyRead(w, r, "", r.PathValue("name"))
}

func (s *Server) aclPolicyRead(w http.ResponseWriter, r *http.Request, id, name string) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	var reply rpc.ACLPolicyResponse
	if err := s.door.RPC(r.Context(), rpc.MethodACLPolicyRead, &rpc.ACLPolicyReadRequest{QueryOptions: opts, ID: id, Name: name}, &reply); err != nil {
		return err
	}
	writeRead(w, r, reply.QueryMeta, policyJSON(reply.Policy, true))
	return nil
}

func (s *Server) aclPolicyWrite(w http.ResponseWriter, r *http.Request, id string) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	var body aclPolicyBody
	if err := s.decodeBodyLenient(w, r, &body); err != nil {
		return err
	}
	if id != "" && body.ID != "" && !strings.EqualFold(id, body.ID) {
		return badRequest("ID", "%q differs from the ID in the path, %q", body.ID, id)
	}
	args := &rpc.ACLPolicySetRequest{Policy: catalog.ACLPolicy{ID: id, Name: body.Name, Description: body.Description, Rules: body.Rules, Datacenters: body.Datacenters}}
	var reply rpc.ACLPolicyResponse
	if err := s.door.RPC(r.Context(), rpc.MethodACLPolicySet, args, &reply); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, policyJSON(reply.Policy, true))
	return nil
}

// GET /v1/acl/policies lists policies without their rules, as Consul.
func (s *Server) aclPolicies(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	var reply rpc.ACLPoliciesResponse
	if err := s.door.RPC(r.Context(), rpc.MethodACLPolicyList, &rpc.ACLPolicyListRequest{QueryOptions: opts}, &reply); err != nil {
		return err
	}
	out := make([]aclJSONPolicy, 0, len(reply.Policies))
	for _, p := range reply.Policies {
		out = append(out, policyJSON(p, false))
	}
	writeRead(w, r, reply.QueryMeta, out)
	return nil
}

// aclTokenBody is a token as clients send it.
type aclTokenBody struct {
	AccessorID        string
	SecretID          string
	Description       string
	Policies          []aclJSONLink
	Roles             []aclJSONLink
	ServiceIdentities []catalog.ACLServiceIdentity
	NodeIdentities    []catalog.ACLNodeIdentity
	Local             bool
	// ExpirationTTL ("1h", or nanoseconds) or ExpirationTime (RFC 3339)
	// make the token expire, as in Consul.
	ExpirationTTL  duration
	ExpirationTime *time.Time
}

func (s *Server) aclTokenCreate(w http.ResponseWriter, r *http.Request) error {
	return s.aclTokenWrite(w, r, "")
}

// /v1/acl/token/{id}: GET reads ("self" is the caller's own), PUT
// updates, DELETE deletes.
func (s *Server) aclTokenItem(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	id := r.PathValue("id")
	switch r.Method {
	case http.MethodPut:
		return s.aclTokenWrite(w, r, id)
	case http.MethodDelete:
		if err := s.door.RPC(r.Context(), rpc.MethodACLTokenDelete, &rpc.ACLTokenDeleteRequest{AccessorID: id}, nil); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, true)
		return nil
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	var reply rpc.ACLTokenResponse
	args := &rpc.ACLTokenReadRequest{QueryOptions: opts, AccessorID: id, Self: id == "self"}
	if err := s.door.RPC(r.Context(), rpc.MethodACLTokenRead, args, &reply); err != nil {
		return err
	}
	writeRead(w, r, reply.QueryMeta, tokenJSON(reply.Token))
	return nil
}

func (s *Server) aclTokenWrite(w http.ResponseWriter, r *http.Request, id string) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	var body aclTokenBody
	if err := s.decodeBodyLenient(w, r, &body); err != nil {
		return err
	}
	if id != "" && body.AccessorID != "" && !strings.EqualFold(id, body.AccessorID) {
		return badRequest("AccessorID", "%q differs from the ID in the path, %q", body.AccessorID, id)
	}
	spec := rpc.ACLTokenSpec{
		AccessorID: body.AccessorID, SecretID: body.SecretID, Description: body.Description, Local: body.Local,
		ServiceIdentities: body.ServiceIdentities, NodeIdentities: body.NodeIdentities,
	}
	var err error
	if spec.ExpirationTTL, err = body.ExpirationTTL.parse("ExpirationTTL"); err != nil {
		return err
	}
	if body.ExpirationTime != nil {
		spec.ExpirationTime = *body.ExpirationTime
	}
	if id != "" {
		spec.AccessorID = id
	}
	for _, l := range body.Policies {
		spec.Policies = append(spec.Policies, catalog.ACLPolicyLink(l))
	}
	for _, l := range body.Roles {
		spec.Roles = append(spec.Roles, catalog.ACLRoleLink(l))
	}
	var reply rpc.ACLTokenResponse
	if err := s.door.RPC(r.Context(), rpc.MethodACLTokenSet, &rpc.ACLTokenSetRequest{Spec: spec, Update: id != ""}, &reply); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tokenJSON(reply.Token))
	return nil
}

// GET /v1/acl/tokens lists tokens, filtered by one of ?policy, ?role,
// ?servicename and ?authmethod; their secrets only with
// acl.tokens_secret_readable, to acl:write holders.
func (s *Server) aclTokens(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	args := &rpc.ACLTokenListRequest{QueryOptions: opts, Policy: q.Get("policy"), Role: q.Get("role"), ServiceName: q.Get("servicename"), AuthMethod: q.Get("authmethod")}
	var reply rpc.ACLTokensResponse
	if err := s.door.RPC(r.Context(), rpc.MethodACLTokenList, args, &reply); err != nil {
		return err
	}
	out := make([]aclJSONToken, 0, len(reply.Tokens))
	for _, t := range reply.Tokens {
		out = append(out, tokenJSON(t))
	}
	writeRead(w, r, reply.QueryMeta, out)
	return nil
}
