package consensus

import (
	"fmt"
	"maps"
	"net/netip"
	"strings"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
)

// This file holds what the Catalog endpoint checks before a write: that
// the token may make it (Consul's rules), and that a registration does not
// take a node name from the live member holding it.

// authorizeRegister checks a registration against authz, as Consul does:
// node:write when the node is new or changes (address, metadata) or a
// node-level check is written; service:write on the service, and on the
// service an existing instance of that ID had, so a token cannot rename
// someone else's instance into its own; for each check, write on its
// owner and on the owner of the check of that ID the node holds already,
// so a token cannot take another service's (or the node's) check onto a
// service of its own and so bring a failing instance back into answers.
func (c *Catalog) authorizeRegister(authz authorizer, reg *catalog.RegisterRequest) error {
	if authz == nil {
		return nil
	}
	store := c.srv.Store()
	_, node, err := store.Node(nil, reg.Node)
	if err != nil {
		return err
	}
	nodeChanges := node == nil || (!reg.SkipNodeUpdate &&
		(node.Address != reg.Address || node.ID != reg.ID || !maps.Equal(node.Meta, reg.NodeMeta) ||
			!maps.Equal(node.TaggedAddresses, reg.TaggedAddresses)))
	if nodeChanges && !authz.NodeWrite(reg.Node) {
		return denied("node", "write", reg.Node)
	}
	var existing []*catalog.Service
	var existingChecks []*catalog.Check
	if node != nil {
		if _, existing, err = store.NodeServices(nil, reg.Node); err != nil {
			return err
		}
		if len(reg.Checks) > 0 {
			if _, existingChecks, err = store.NodeChecks(nil, reg.Node); err != nil {
				return err
			}
		}
	}
	if s := reg.Service; s != nil {
		if !authz.ServiceWrite(s.Service) {
			return denied("service", "write", s.Service)
		}
		if old := findService(existing, s.ID); old != nil && !strings.EqualFold(old.Service, s.Service) && !authz.ServiceWrite(old.Service) {
			return denied("service", "write", old.Service)
		}
	}
	for _, ch := range reg.Checks {
		switch {
		case ch.ServiceID == "":
			if !authz.NodeWrite(reg.Node) {
				return denied("node", "write", reg.Node)
			}
		default:
			name := ""
			if reg.Service != nil && reg.Service.ID == ch.ServiceID {
				name = reg.Service.Service
			} else if old := findService(existing, ch.ServiceID); old != nil {
				name = old.Service
			}
			if !authz.ServiceWrite(name) {
				return denied("service", "write", name)
			}
		}
		if old := findCheck(existingChecks, ch.CheckID); old != nil && old.ServiceID != ch.ServiceID {
			if old.ServiceID == "" && !authz.NodeWrite(reg.Node) {
				return denied("node", "write", reg.Node)
			}
			if old.ServiceID != "" && !authz.ServiceWrite(old.ServiceName) {
				return denied("service", "write", old.ServiceName)
			}
		}
	}
	return nil
}

func findCheck(checks []*catalog.Check, id string) *catalog.Check {
	for _, c := range checks {
		if c.CheckID == id {
			return c
		}
	}
	return nil
}

// authorizeDeregister checks a deregistration: node:write for a whole node
// or a node-level check, service:write on the service of a service or of a
// service-level check. Something that does not exist needs node:write, so
// that a token cannot probe what exists through the error it gets.
func (c *Catalog) authorizeDeregister(authz authorizer, d *catalog.DeregisterRequest) error {
	if authz == nil {
		return nil
	}
	store := c.srv.Store()
	serviceName := func(id string) (string, bool, error) {
		_, services, err := store.NodeServices(nil, d.Node)
		if err != nil {
			return "", false, err
		}
		if s := findService(services, id); s != nil {
			return s.Service, true, nil
		}
		return "", false, nil
	}
	var name string
	var found bool
	var err error
	switch {
	case d.ServiceID != "":
		name, found, err = serviceName(d.ServiceID)
	case d.CheckID != "":
		_, checks, cerr := store.NodeChecks(nil, d.Node)
		if cerr != nil {
			return cerr
		}
		for _, ch := range checks {
			if ch.CheckID == d.CheckID && ch.ServiceID != "" {
				name, found = ch.ServiceName, true
			}
		}
	}
	if err != nil {
		return err
	}
	if found {
		if !authz.ServiceWrite(name) {
			return denied("service", "write", name)
		}
		return nil
	}
	if !authz.NodeWrite(d.Node) {
		return denied("node", "write", d.Node)
	}
	return nil
}

func findService(services []*catalog.Service, id string) *catalog.Service {
	for _, s := range services {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// checkNodeOwner refuses a registration that would move a node to another
// address while the LAN member of that name is alive at its own: the
// member's agent holds the name, and a second agent started with the same
// node_name (by mistake or not) must be told so, not take the name over
// and have the real node's services deregistered by its anti-entropy.
// Likewise a registration with the node ID of a live member of another
// name is refused, as Consul refuses it, and one giving a node another
// node ID than the catalog's: a name is bound to its ID until the node is
// deregistered. Nodes that are not gossip members
// (external ones registered through /v1/catalog/register) are not checked
// by name. A registration that leaves an existing node row alone
// (SkipNodeUpdate) is checked all the same when it gives the node's ID and
// an address, as an agent's pushes do: they say who sends it. Without an
// ID it is Consul's "add this service to that node", which leaves the node
// as it is whatever address it carries.
func (c *Catalog) checkNodeOwner(reg *catalog.RegisterRequest) error {
	_, node, err := c.srv.Store().Node(nil, reg.Node)
	if err != nil {
		return err
	}
	if reg.ID != "" {
		if node != nil && node.ID != "" && !strings.EqualFold(node.ID, reg.ID) {
			return &catalog.FieldError{Field: "ID", Reason: fmt.Sprintf(
				"node name %q is held by node ID %s until that node is deregistered (the leader reaps it once gossip forgets it, after reconnect_timeout); "+
					"a replacement of that node starts with its node_id, any other agent with another node_name", reg.Node, node.ID)}
		}
	}
	if c.cfg.Members == nil || reg.Address == "" || (reg.SkipNodeUpdate && reg.ID == "" && node != nil) {
		return nil
	}
	addr, err := netip.ParseAddr(reg.Address)
	if err != nil {
		return nil // not an IP: not a gossip member's address either
	}
	for _, m := range c.cfg.Members.MembersByID(reg.ID) {
		if m.Status == gossip.StatusAlive && !strings.EqualFold(m.Node, reg.Node) {
			return &catalog.FieldError{Field: "ID", Reason: fmt.Sprintf(
				"node ID %s is held by the live member %q; node IDs must be unique: give this agent another node_id (or delete <data_dir>/node-id)", reg.ID, m.Node)}
		}
	}
	for _, m := range c.cfg.Members.MembersByNode(reg.Node) {
		if m.Status == gossip.StatusAlive && m.Addr.Unmap() != addr.Unmap() {
			return &catalog.FieldError{Field: "Node", Reason: fmt.Sprintf(
				"node name %q is held by a live member at %s; give this agent another node_name", reg.Node, m.Addr)}
		}
	}
	return nil
}

// MemberFinder finds the members of the LAN gossip pool holding a node
// name or a node ID, compared as strings.EqualFold does, of any status; nil
// when none (and for an ID of ""). *gossip.Pool is one. The Catalog
// endpoint calls it on every registration, from the RPC goroutines: it
// must be safe for concurrent use and cheap, not a scan of the pool.
type MemberFinder interface {
	MembersByNode(node string) []gossip.Member
	MembersByID(id string) []gossip.Member
}

var _ MemberFinder = (*gossip.Pool)(nil)
