package httpapi

import (
	"net/http"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
)

// This file holds the checks of the endpoints the agent answers itself
// (/v1/agent/...) that depend on what the request names (a service, a
// check): the servers check everything that reaches them, but a local
// registration, a TTL update or a leave never does. What does not depend
// on the request is its route's Need (routes.go). The rules are
// Consul's: service:write for what belongs to a service, node:write for
// the node's own checks and maintenance, agent:read/write for the agent
// itself, operator:write to make it leave.

// localServiceName returns the name of the agent's service with ID id,
// "" when it holds none (the endpoint then answers 404).
func (s *Server) localServiceName(id string) string {
	for _, svc := range s.local.Services() {
		if svc.ID == id {
			return svc.Service
		}
	}
	return ""
}

// mayWriteService checks service:write on the service of ID id.
func (s *Server) mayWriteService(r *http.Request, id string) error {
	name := s.localServiceName(id)
	if name == "" {
		return nil
	}
	return s.permission(r, "service", "write", name, func(a *acl.Authorizer) bool { return a.ServiceWrite(name) })
}

// mayWriteCheck checks the right to change a local check: service:write on
// its service, or node:write on this node for a node-level check.
func (s *Server) mayWriteCheck(r *http.Request, checkID string) error {
	for _, c := range s.local.Checks() {
		if c.CheckID != checkID {
			continue
		}
		if c.ServiceID != "" {
			return s.mayWriteService(r, c.ServiceID)
		}
		return s.mayWriteNode(r)
	}
	return nil
}

// mayWriteCheckDef checks the right to register a check: on its service
// when it names one, else on this node.
func (s *Server) mayWriteCheckDef(r *http.Request, serviceID string) error {
	if serviceID != "" {
		return s.mayWriteService(r, serviceID)
	}
	return s.mayWriteNode(r)
}

func (s *Server) mayWriteNode(r *http.Request) error {
	node := s.cfg.NodeName
	return s.permission(r, "node", "write", node, func(a *acl.Authorizer) bool { return a.NodeWrite(node) })
}

func (s *Server) mayWriteOperator(r *http.Request) error {
	return s.permission(r, "operator", "write", "", (*acl.Authorizer).OperatorWrite)
}

// readableServices returns the local services the request may read.
func (s *Server) readableServices(r *http.Request) ([]*catalog.Service, error) {
	authz, err := s.authorizer(r)
	if err != nil {
		return nil, err
	}
	all := s.local.Services()
	if authz == nil {
		return all, nil
	}
	out := all[:0:0]
	for _, svc := range all {
		if authz.ServiceRead(svc.Service) {
			out = append(out, svc)
		}
	}
	return out, nil
}

// readableChecks returns the local checks the request may read.
func (s *Server) readableChecks(r *http.Request) ([]*catalog.Check, error) {
	authz, err := s.authorizer(r)
	if err != nil {
		return nil, err
	}
	all := s.local.Checks()
	if authz == nil {
		return all, nil
	}
	out := all[:0:0]
	for _, c := range all {
		if c.ServiceName != "" && authz.ServiceRead(c.ServiceName) || c.ServiceName == "" && authz.NodeRead(c.Node) {
			out = append(out, c)
		}
	}
	return out, nil
}
