package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// ACL is the group of /v1/acl endpoints: the datacenter's ACL tokens and
// policies, kept by the servers. Every call is made with Config.Token.
//
// The agent's refusals come back as a *StatusError: Code 401 when ACLs are
// off ("ACL support disabled"), 403 when the token may not do what was
// asked, its Message the agent's "Permission denied: ..." line, and 404
// for an ID or name that names nothing.
type ACL struct{ c *Client }

// ACLLink names a policy a token holds, by ID or by name. In what the
// agent sends both are set; in what a client sends one is enough.
type ACLLink struct {
	ID   string `json:",omitempty"`
	Name string `json:",omitempty"`
}

// ACLToken is a token in Consul's shape.
type ACLToken struct {
	// AccessorID is the token's public ID, used to read, update and
	// delete it. Empty on create lets the servers choose one.
	AccessorID string `json:",omitempty"`
	// SecretID is what requests carry (Config.Token). The servers keep
	// only its hash, so it is set only in the answer to Bootstrap and
	// TokenCreate, and to TokenReadSelf. Empty on create lets the servers
	// choose one; it cannot change on update.
	SecretID    string `json:",omitempty"`
	Description string
	// Policies are the policies whose rules the token grants.
	Policies []ACLLink `json:",omitempty"`
	// Local keeps the token in its own datacenter.
	Local      bool
	CreateTime time.Time `json:",omitzero"`
	// ExpirationTTL, on create, makes the token stop working that long
	// after (within the servers' acl.token_min/max_expiration_ttl);
	// ExpirationTime is when it does. Zero: never.
	ExpirationTTL  time.Duration `json:",omitzero"`
	ExpirationTime *time.Time    `json:",omitempty"`
	CreateIndex    uint64        `json:",omitzero"`
	ModifyIndex    uint64        `json:",omitzero"`
}

// ACLTokenListEntry is a token as TokenList shows it: without its secret,
// which the servers never send in a list.
type ACLTokenListEntry struct {
	AccessorID     string
	Description    string
	Policies       []ACLLink
	Local          bool
	CreateTime     time.Time
	ExpirationTime *time.Time `json:",omitempty"`
	CreateIndex    uint64
	ModifyIndex    uint64
}

// ACLPolicy is a policy in Consul's shape: rules in HCL, such as
// `service "web" { policy = "write" }`.
type ACLPolicy struct {
	// ID is chosen by the servers on create.
	ID          string `json:",omitempty"`
	Name        string
	Description string
	Rules       string
	CreateIndex uint64 `json:",omitzero"`
	ModifyIndex uint64 `json:",omitzero"`
}

// ACLPolicyListEntry is a policy as PolicyList shows it: without its
// rules, as Consul's list.
type ACLPolicyListEntry struct {
	ID          string
	Name        string
	Description string
	CreateIndex uint64
	ModifyIndex uint64
}

// SetAgentToken sets one of the agent's own tokens (kind: default, agent,
// agent_recovery, replication, config_file_service_registration or dns):
// PUT /v1/agent/token/<kind>. It needs acl:write; an unknown kind is a
// *StatusError with Code 404.
func (a *ACL) SetAgentToken(ctx context.Context, kind, secret string) error {
	if kind == "" {
		return errors.New("set agent token: kind is empty")
	}
	_, err := a.c.do(ctx, request{method: http.MethodPut, path: "/v1/agent/token/" + url.PathEscape(kind),
		body: struct{ Token string }{secret}}, nil)
	return err
}

// Bootstrap creates the first management token and returns it with its
// secret: PUT /v1/acl/bootstrap. It works once per cluster; after that the
// agent answers 403. secret, a UUID, chooses the token's secret; empty
// lets the servers choose.
func (a *ACL) Bootstrap(ctx context.Context, secret string) (*ACLToken, error) {
	var body any
	if secret != "" {
		body = struct{ BootstrapSecret string }{secret}
	}
	var out ACLToken
	if _, err := a.c.do(ctx, request{method: http.MethodPut, path: "/v1/acl/bootstrap", body: body}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PolicyCreate creates a policy and returns it as stored, with its ID:
// PUT /v1/acl/policy. p.ID must be empty; rules that do not parse are a
// *StatusError with Field "Rules".
func (a *ACL) PolicyCreate(ctx context.Context, p *ACLPolicy) (*ACLPolicy, error) {
	switch {
	case p == nil:
		return nil, errors.New("create ACL policy: policy is nil")
	case p.ID != "":
		return nil, errors.New("create ACL policy: ID must be empty: the servers choose it (use PolicyUpdate to change a policy)")
	}
	return a.policyWrite(ctx, "/v1/acl/policy", p)
}

// PolicyUpdate replaces the policy with p.ID by p and returns it as
// stored: PUT /v1/acl/policy/<id>. Every field is replaced: read the
// policy first to change one.
func (a *ACL) PolicyUpdate(ctx context.Context, p *ACLPolicy) (*ACLPolicy, error) {
	switch {
	case p == nil:
		return nil, errors.New("update ACL policy: policy is nil")
	case p.ID == "":
		return nil, errors.New("update ACL policy: ID is empty")
	}
	return a.policyWrite(ctx, "/v1/acl/policy/"+url.PathEscape(p.ID), p)
}

func (a *ACL) policyWrite(ctx context.Context, path string, p *ACLPolicy) (*ACLPolicy, error) {
	var out ACLPolicy
	if _, err := a.c.do(ctx, request{method: http.MethodPut, path: path, body: p}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PolicyRead returns the policy with ID id: GET /v1/acl/policy/<id>.
func (a *ACL) PolicyRead(ctx context.Context, id string) (*ACLPolicy, error) {
	if id == "" {
		return nil, errors.New("read ACL policy: ID is empty")
	}
	return a.policyRead(ctx, "/v1/acl/policy/"+url.PathEscape(id))
}

// PolicyReadByName returns the policy named name: GET
// /v1/acl/policy/name/<name>.
func (a *ACL) PolicyReadByName(ctx context.Context, name string) (*ACLPolicy, error) {
	if name == "" {
		return nil, errors.New("read ACL policy: name is empty")
	}
	return a.policyRead(ctx, "/v1/acl/policy/name/"+url.PathEscape(name))
}

func (a *ACL) policyRead(ctx context.Context, path string) (*ACLPolicy, error) {
	var out ACLPolicy
	if _, err := a.c.do(ctx, request{method: http.MethodGet, path: path}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PolicyDelete deletes the policy with ID id: DELETE /v1/acl/policy/<id>.
// Tokens that link to it keep the link, which then grants nothing.
func (a *ACL) PolicyDelete(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("delete ACL policy: ID is empty")
	}
	_, err := a.c.do(ctx, request{method: http.MethodDelete, path: "/v1/acl/policy/" + url.PathEscape(id)}, nil)
	return err
}

// PolicyList lists every policy, without rules: GET /v1/acl/policies.
func (a *ACL) PolicyList(ctx context.Context) ([]*ACLPolicyListEntry, error) {
	var out []*ACLPolicyListEntry
	if _, err := a.c.do(ctx, request{method: http.MethodGet, path: "/v1/acl/policies"}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// TokenCreate creates a token and returns it with its secret, the only
// time the secret is shown: PUT /v1/acl/token. Policies may be linked by
// ID or by name; a name that matches no policy is a *StatusError with
// Field "Policies[i]".
func (a *ACL) TokenCreate(ctx context.Context, t *ACLToken) (*ACLToken, error) {
	if t == nil {
		return nil, errors.New("create ACL token: token is nil")
	}
	return a.tokenWrite(ctx, "/v1/acl/token", t)
}

// TokenUpdate replaces the description, policies and Local of the token
// with t.AccessorID: PUT /v1/acl/token/<accessor>. Every one of them is
// replaced: read the token first to change one. The secret cannot change:
// leave SecretID empty or give the token's own.
func (a *ACL) TokenUpdate(ctx context.Context, t *ACLToken) (*ACLToken, error) {
	switch {
	case t == nil:
		return nil, errors.New("update ACL token: token is nil")
	case t.AccessorID == "":
		return nil, errors.New("update ACL token: AccessorID is empty")
	}
	return a.tokenWrite(ctx, "/v1/acl/token/"+url.PathEscape(t.AccessorID), t)
}

func (a *ACL) tokenWrite(ctx context.Context, path string, t *ACLToken) (*ACLToken, error) {
	var out ACLToken
	if _, err := a.c.do(ctx, request{method: http.MethodPut, path: path, body: t}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TokenRead returns the token with accessor ID accessor, without its
// secret: GET /v1/acl/token/<accessor>.
func (a *ACL) TokenRead(ctx context.Context, accessor string) (*ACLToken, error) {
	switch accessor {
	case "":
		return nil, errors.New("read ACL token: accessor ID is empty")
	case "self":
		// The agent's path for the caller's own token; an accessor ID is
		// a UUID, so "self" here is a mistake for TokenReadSelf.
		return nil, errors.New(`read ACL token: "self" is not an accessor ID (use TokenReadSelf)`)
	}
	return a.tokenRead(ctx, "/v1/acl/token/"+url.PathEscape(accessor))
}

// TokenReadSelf returns the token the client is configured with, secret
// included: GET /v1/acl/token/self. Without a token it is the anonymous
// token.
func (a *ACL) TokenReadSelf(ctx context.Context) (*ACLToken, error) {
	return a.tokenRead(ctx, "/v1/acl/token/self")
}

func (a *ACL) tokenRead(ctx context.Context, path string) (*ACLToken, error) {
	var out ACLToken
	if _, err := a.c.do(ctx, request{method: http.MethodGet, path: path}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TokenDelete deletes the token with accessor ID accessor: DELETE
// /v1/acl/token/<accessor>.
func (a *ACL) TokenDelete(ctx context.Context, accessor string) error {
	if accessor == "" {
		return errors.New("delete ACL token: accessor ID is empty")
	}
	_, err := a.c.do(ctx, request{method: http.MethodDelete, path: "/v1/acl/token/" + url.PathEscape(accessor)}, nil)
	return err
}

// TokenList lists every token, without secrets: GET /v1/acl/tokens.
func (a *ACL) TokenList(ctx context.Context) ([]*ACLTokenListEntry, error) {
	var out []*ACLTokenListEntry
	if _, err := a.c.do(ctx, request{method: http.MethodGet, path: "/v1/acl/tokens"}, &out); err != nil {
		return nil, err
	}
	return out, nil
}
