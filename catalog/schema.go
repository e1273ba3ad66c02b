package catalog

import "github.com/hashicorp/go-memdb"

// Table names.
const (
	tableNodes    = "nodes"
	tableServices = "services"
	tableChecks   = "checks"
	tableIndex    = "index"
	tableQueries  = "queries" // prepared queries (queries.go)
)

// serviceRow is how a service is stored: the service with the node it is on.
// Name is lowercased so lookups ignore case, as DNS does.
type serviceRow struct {
	Node    string
	ID      string
	Name    string
	Address string // the service's own address, "" when it uses its node's
	Service *Service
}

// checkRow is how a check is stored. ServiceName and Status are copied out
// of the check for the indexes on them; an empty one has no index entry.
type checkRow struct {
	Node        string
	CheckID     string
	ServiceID   string
	ServiceName string
	Status      string
	Check       *Check
}

func newCheckRow(c *Check) *checkRow {
	return &checkRow{
		Node: c.Node, CheckID: c.CheckID, ServiceID: c.ServiceID,
		ServiceName: c.ServiceName, Status: string(c.Status), Check: c,
	}
}

// indexRow records the Raft index of the last write to a table.
type indexRow struct {
	Table string
	Index uint64
}

func schema() *memdb.DBSchema {
	lower := func(field string) memdb.Indexer {
		return &memdb.StringFieldIndex{Field: field, Lowercase: true}
	}
	exact := func(field string) memdb.Indexer { return &memdb.StringFieldIndex{Field: field} }
	tables := map[string]*memdb.TableSchema{
		tableNodes: {
			Name: tableNodes,
			Indexes: map[string]*memdb.IndexSchema{
				"id":      {Name: "id", Unique: true, Indexer: lower("Node")},
				"address": {Name: "address", AllowMissing: true, Indexer: exact("Address")},
			},
		},
		tableServices: {
			Name: tableServices,
			Indexes: map[string]*memdb.IndexSchema{
				"id": {Name: "id", Unique: true, Indexer: &memdb.CompoundIndex{
					Indexes: []memdb.Indexer{lower("Node"), exact("ID")},
				}},
				"node":    {Name: "node", Indexer: lower("Node")},
				"service": {Name: "service", Indexer: lower("Name")},
				// address indexes services with their own address, for PTR.
				"address": {Name: "address", AllowMissing: true, Indexer: exact("Address")},
			},
		},
		tableChecks: {
			Name: tableChecks,
			Indexes: map[string]*memdb.IndexSchema{
				"id": {Name: "id", Unique: true, Indexer: &memdb.CompoundIndex{
					Indexes: []memdb.Indexer{lower("Node"), exact("CheckID")},
				}},
				"node": {Name: "node", Indexer: lower("Node")},
				// service indexes service-level checks by service name,
				// case-insensitively; node-level checks (no ServiceName)
				// are left out.
				"service": {Name: "service", AllowMissing: true, Indexer: lower("ServiceName")},
				// status: a check without one (only a store written to
				// without validation holds such) is left out.
				"status": {Name: "status", AllowMissing: true, Indexer: exact("Status")},
			},
		},
		tableQueries: {
			Name: tableQueries,
			Indexes: map[string]*memdb.IndexSchema{
				"id": {Name: "id", Unique: true, Indexer: lower("ID")},
				// name: queries without a name are left out; the rest
				// are unique by name, compared as DNS compares them.
				"name": {Name: "name", Unique: true, AllowMissing: true, Indexer: lower("Name")},
			},
		},
		tableIndex: {
			Name: tableIndex,
			Indexes: map[string]*memdb.IndexSchema{
				"id": {Name: "id", Unique: true, Indexer: exact("Table")},
			},
		},
	}
	for name, t := range aclTables() {
		tables[name] = t
	}
	for name, t := range kvTables() { // kvs.go
		tables[name] = t
	}
	for name, t := range sessionTables() { // sessions.go
		tables[name] = t
	}
	for name, t := range coordinateTables() { // coordinates.go
		tables[name] = t
	}
	return &memdb.DBSchema{Tables: tables}
}
