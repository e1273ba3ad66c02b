package catalog

import (
	"fmt"
	"strings"
)

// Check IDs with a fixed owner, Consul's: the leader writes the gossip
// check of every node, an agent's maintenance endpoints write the
// maintenance checks. A registration may not give them another owner: a
// check moved onto a healthy service stops keeping its real owner out of
// DNS answers.
const (
	// SerfCheckID is the node-level check the leader keeps for every LAN
	// member: passing while the member is alive, critical once it failed.
	SerfCheckID = "serfHealth"
	// NodeMaintenanceCheckID keeps a node in maintenance out of answers.
	NodeMaintenanceCheckID = "_node_maintenance"
	// ServiceMaintenancePrefix, followed by a service ID, keeps that
	// service in maintenance out of answers.
	ServiceMaintenancePrefix = "_service_maintenance:"
	// RaftStorageCheckID is the check the leader keeps on every server's
	// ServerServiceID service: critical while the server cannot write its
	// Raft storage.
	RaftStorageCheckID = "raftStorage"
	// ServerServiceID is the service (ID and name) the leader keeps on
	// every server's node, so that <it>.service.<domain> finds them.
	ServerServiceID = "cairn"
)

// ReservedCheckOwner reports whether id is one of the reserved check IDs
// and, if so, the ID of the service it must belong to ("" for the node
// itself).
func ReservedCheckOwner(id string) (serviceID string, reserved bool) {
	switch {
	case id == SerfCheckID, id == NodeMaintenanceCheckID:
		return "", true
	case id == RaftStorageCheckID:
		return ServerServiceID, true
	case strings.HasPrefix(id, ServiceMaintenancePrefix):
		return strings.TrimPrefix(id, ServiceMaintenancePrefix), true
	}
	return "", false
}

// ValidateCheckOwner refuses a check whose ID is reserved for another
// owner than the one it names (field names the CheckID field in the
// caller's terms).
func ValidateCheckOwner(field string, c *Check) error {
	owner, reserved := ReservedCheckOwner(c.CheckID)
	if !reserved || owner == c.ServiceID {
		return nil
	}
	if owner == "" {
		return &FieldError{Field: field, Reason: fmt.Sprintf("%q is reserved for the node's own check; it cannot belong to service %q", c.CheckID, c.ServiceID)}
	}
	return &FieldError{Field: field, Reason: fmt.Sprintf("%q is reserved for the maintenance check of service %q", c.CheckID, owner)}
}
