package httpapi

import (
	"net/http"
	"strings"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// aclJSONRole is a role in Consul's JSON shape, as clients send and read
// it.
type aclJSONRole struct {
	ID                string
	Name              string
	Description       string
	Policies          []aclJSONLink                `json:",omitempty"`
	ServiceIdentities []catalog.ACLServiceIdentity `json:",omitempty"`
	NodeIdentities    []catalog.ACLNodeIdentity    `json:",omitempty"`
	CreateIndex       uint64
	ModifyIndex       uint64
}

func roleJSON(r *catalog.ACLRole) aclJSONRole {
	out := aclJSONRole{
		ID: r.ID, Name: r.Name, Description: r.Description, ServiceIdentities: r.ServiceIdentities,
		NodeIdentities: r.NodeIdentities, CreateIndex: r.CreateIndex, ModifyIndex: r.ModifyIndex,
	}
	for _, l := range r.Policies {
		out.Policies = append(out.Policies, aclJSONLink(l))
	}
	return out
}

// PUT /v1/acl/role creates a role.
func (s *Server) aclRoleCreate(w http.ResponseWriter, r *http.Request) error {
	return s.aclRoleWrite(w, r, "")
}

// /v1/acl/role/{id}: GET reads, PUT updates, DELETE deletes.
func (s *Server) aclRoleItem(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	id := r.PathValue("id")
	switch r.Method {
	case http.MethodPut:
		return s.aclRoleWrite(w, r, id)
	case http.MethodDelete:
		if err := s.door.RPC(r.Context(), rpc.MethodACLRoleDelete, &rpc.ACLRoleDeleteRequest{ID: id}, nil); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, true)
		return nil
	}
	return s.aclRoleRead(w, r, id, "")
}

// GET /v1/acl/role/name/{name}.
func (s *Server) aclRoleByName(w http.ResponseWriter, r *http.Request) error {
	return s.aclRoleRead(w, r, "", r.PathValue("name"))
}

func (s *Server) aclRoleRead(w http.ResponseWriter, r *http.Request, id, name string) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	var reply rpc.ACLRoleResponse
	if err := s.door.RPC(r.Context(), rpc.MethodACLRoleRead, &rpc.ACLRoleReadRequest{QueryOptions: opts, ID: id, Name: name}, &reply); err != nil {
		return err
	}
	writeRead(w, r, reply.QueryMeta, roleJSON(reply.Role))
	return nil
}

func (s *Server) aclRoleWrite(w http.ResponseWriter, r *http.Request, id string) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	var body aclJSONRole
	if err := s.decodeBodyLenient(w, r, &body); err != nil {
		return err
	}
	if id != "" && body.ID != "" && !strings.EqualFold(id, body.ID) {
		return badRequest("ID", "%q differs from the ID in the path, %q", body.ID, id)
	}
	role := catalog.ACLRole{ID: id, Name: body.Name, Description: body.Description, ServiceIdentities: body.ServiceIdentities, NodeIdentities: body.NodeIdentities}
	for _, l := range body.Policies {
		role.Policies = append(role.Policies, catalog.ACLPolicyLink(l))
	}
	var reply rpc.ACLRoleResponse
	if err := s.door.RPC(r.Context(), rpc.MethodACLRoleSet, &rpc.ACLRoleSetRequest{Role: role}, &reply); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, roleJSON(reply.Role))
	return nil
}

// GET /v1/acl/roles lists roles, or with ?policy those linking to it.
func (s *Server) aclRoles(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	var reply rpc.ACLRolesResponse
	if err := s.door.RPC(r.Context(), rpc.MethodACLRoleList, &rpc.ACLRoleListRequest{QueryOptions: opts, Policy: r.URL.Query().Get("policy")}, &reply); err != nil {
		return err
	}
	out := make([]aclJSONRole, 0, len(reply.Roles))
	for _, role := range reply.Roles {
		out = append(out, roleJSON(role))
	}
	writeRead(w, r, reply.QueryMeta, out)
	return nil
}

// PUT /v1/acl/token/{id}/clone makes a new token like the one given,
// with the body's Description (the source's when empty).
func (s *Server) aclTokenClone(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	var body struct{ Description string }
	if err := s.decodeBodyLenient(w, r, &body); err != nil {
		return err
	}
	args := &rpc.ACLTokenSetRequest{CloneFrom: r.PathValue("id"), Spec: rpc.ACLTokenSpec{Description: body.Description}}
	var reply rpc.ACLTokenResponse
	if err := s.door.RPC(r.Context(), rpc.MethodACLTokenSet, args, &reply); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tokenJSON(reply.Token))
	return nil
}

// GET /v1/acl/auth-methods: cairn has no auth methods (no Kubernetes,
// JWT or OIDC login), so the list is empty, and creating one is a 404.
func (s *Server) aclAuthMethods(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, []struct{}{})
	return nil
}

// GET /v1/acl/replication: how this datacenter's ACL replication from the
// primary goes, in Consul's shape.
func (s *Server) aclReplication(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireACL(); err != nil {
		return err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	var reply rpc.ACLReplicationStatus
	if err := s.door.RPC(r.Context(), rpc.MethodACLReplicationStatus, &rpc.ACLReplicationStatusRequest{QueryOptions: opts}, &reply); err != nil {
		return err
	}
	writeRead(w, r, rpc.QueryMeta{KnownLeader: true}, reply)
	return nil
}
