package consensus

import (
	"fmt"
	"strings"

	"github.com/cairndns/cairn/rpc"
)

// What each endpoint's methods need of their caller (rpc.Need), declared
// here beside the endpoints and checked by rpc.Server.Register, which
// refuses a method without one. The dispatcher enforces the level (a
// known token, a management token) before a method runs, through
// Catalog.AuthorizeCall; each method checks the resource and access on
// what its arguments name.

// RPCNeeds declares the Catalog's methods.
func (c *Catalog) RPCNeeds() rpc.Needs {
	return rpc.Needs{
		"Register":         rpc.NeedToken("service,node", "write"),
		"Deregister":       rpc.NeedToken("service,node", "write"),
		"ServiceInstances": rpc.NeedFiltered("service,node"),
		"Nodes":            rpc.NeedFiltered("node"),
		"Services":         rpc.NeedFiltered("service"),
		"NodeServices":     rpc.NeedFiltered("node,service"),
		"Reverse":          rpc.NeedFiltered("service,node"),
		"NodeChecks":       rpc.NeedFiltered("node,service"),
		"ServiceChecks":    rpc.NeedFiltered("service,node"),
		"ChecksInState":    rpc.NeedFiltered("service,node"),
		"ListDatacenters":  rpc.NeedPublic(), // the names of datacenters, as Consul
	}
}

// feedNeed is what Catalog.Feed needs: it tells only names the token may
// read.
var feedNeed = rpc.NeedFiltered("service,node")

// RPCNeeds declares the ACL endpoint's methods.
func (a *ACL) RPCNeeds() rpc.Needs {
	return rpc.Needs{
		// Once per cluster, to anyone: its own rule (catalog.ACLBootstrap).
		"Bootstrap": rpc.NeedPublic(),
		// Tells only what the asking token itself may do; an unknown
		// one is ACL not found.
		"Resolve":      rpc.NeedPublic(),
		"PolicySet":    rpc.NeedToken("acl", "write"),
		"PolicyDelete": rpc.NeedToken("acl", "write"),
		"PolicyRead":   rpc.NeedToken("acl", "read"),
		"PolicyList":   rpc.NeedToken("acl", "read"),
		"TokenSet":     rpc.NeedToken("acl", "write"),
		"TokenDelete":  rpc.NeedToken("acl", "write"),
		"TokenRead":    rpc.NeedToken("acl", "read"), // or the token itself, with Self
		"TokenList":    rpc.NeedToken("acl", "read"),
		"RoleSet":      rpc.NeedToken("acl", "write"),
		"RoleDelete":   rpc.NeedToken("acl", "write"),
		"RoleRead":     rpc.NeedToken("acl", "read"),
		"RoleList":     rpc.NeedToken("acl", "read"),
		// What every token may do, with the secrets' hashes: for a
		// secondary datacenter's replication token only.
		"Replica": rpc.NeedToken("acl", "write"),
		// How replication goes, to anyone, as Consul's.
		"ReplicationStatus": rpc.NeedPublic(),
	}
}

// RPCNeeds declares the KVS endpoint's methods.
func (k *KVS) RPCNeeds() rpc.Needs {
	return rpc.Needs{
		"Apply":    rpc.NeedToken("key", "write"),
		"Get":      rpc.NeedToken("key", "read"),
		"List":     rpc.NeedFiltered("key"),
		"ListKeys": rpc.NeedFiltered("key"),
	}
}

// RPCNeeds declares the Txn endpoint's methods.
func (t *Txn) RPCNeeds() rpc.Needs {
	return rpc.Needs{
		"Apply": rpc.NeedToken("key,session", "write"),
		"Read":  rpc.NeedToken("key", "read"),
	}
}

// RPCNeeds declares the Session endpoint's methods.
func (e *Session) RPCNeeds() rpc.Needs {
	return rpc.Needs{
		"Apply": rpc.NeedToken("session", "write"),
		"Renew": rpc.NeedToken("session", "write"),
		"Get":   rpc.NeedFiltered("session"),
		"List":  rpc.NeedFiltered("session"),
	}
}

// RPCNeeds declares the PreparedQuery endpoint's methods.
func (p *PreparedQuery) RPCNeeds() rpc.Needs {
	return rpc.Needs{
		"Apply":         rpc.NeedToken("query", "write"),
		"Get":           rpc.NeedToken("query", "read"),
		"List":          rpc.NeedFiltered("query"),
		"Execute":       rpc.NeedToken("query", "read"), // its answer filtered by service:read
		"ExecuteRemote": rpc.NeedToken("query", "read"),
	}
}

// RPCNeeds declares the Snapshot endpoint's methods: a snapshot holds
// everything, ACL data included.
func (sn *Snapshot) RPCNeeds() rpc.Needs {
	return rpc.Needs{"Save": rpc.NeedManagement(), "Restore": rpc.NeedManagement(), "Authorize": rpc.NeedManagement()}
}

// RPCNeeds declares the Keyring endpoint's one method: keyring:read to
// list, keyring:write to change, which the method checks by its Op.
func (k *Keyring) RPCNeeds() rpc.Needs {
	return rpc.Needs{"Operation": rpc.NeedToken("keyring", "read,write")}
}

// RPCNeeds declares the Status endpoint's methods: where the leader and
// the servers are, public as in Consul.
func (st *Status) RPCNeeds() rpc.Needs {
	return rpc.Needs{"Leader": rpc.NeedPublic(), "RaftConfiguration": rpc.NeedPublic()}
}

// RPCNeeds declares the Coordinate endpoint's methods.
func (e *Coordinate) RPCNeeds() rpc.Needs {
	return rpc.Needs{
		"Update":          rpc.NeedToken("node", "write"),
		"ListNodes":       rpc.NeedFiltered("node"),
		"Node":            rpc.NeedFiltered("node"),
		"ListDatacenters": rpc.NeedPublic(), // the servers' WAN coordinates, as Consul
	}
}

// RPCNeeds declares the Operator endpoint's methods.
func (op *Operator) RPCNeeds() rpc.Needs {
	return rpc.Needs{
		"AutopilotGetConfiguration": rpc.NeedToken("operator", "read"),
		"AutopilotSetConfiguration": rpc.NeedToken("operator", "write"),
		"ServerHealth":              rpc.NeedToken("operator", "read"),
		"RaftRemovePeer":            rpc.NeedToken("operator", "write"),
		"RaftTransferLeader":        rpc.NeedToken("operator", "write"),
		// The leader asks each server for it (autopilot); it tells
		// the size of the Raft log, nothing a token guards.
		"RaftStats": rpc.NeedPublic(),
		"DNSSECKey": rpc.NeedToken("node", "write"),
	}
}

// AuthorizeCall is the dispatcher's check of a call's token against its
// method's Need (rpc.CallAuthorizer), from this server's copy of the ACL
// data: the token must be known and unexpired, and a management one
// where the Need says so. A request for another datacenter is left to
// that datacenter, whose tokens it carries; it is only forwarded from
// here.
func (c *Catalog) AuthorizeCall(_ string, need rpc.Need, args any) error {
	a, ok := args.(rpc.Authenticated)
	if !ok {
		return fmt.Errorf("%w: the request carries no token", rpc.ErrPermissionDenied)
	}
	if dc := a.RequestDatacenter(); dc != "" && !strings.EqualFold(dc, c.cfg.Datacenter) {
		return nil
	}
	authz, err := c.authorize(a.RequestToken())
	if err != nil || authz == nil {
		return err
	}
	if need.Level == rpc.LevelManagement && !authz.ACLWrite() {
		return denied("acl", "write", "")
	}
	return nil
}

var _ rpc.CallAuthorizer = (*Catalog)(nil)
