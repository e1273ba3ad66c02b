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

// checkRow is how a check is stored. ServiceName and Unhealthy are copied
// out of the check for the indexes on them; an empty one has no index
// entry.
type checkRow struct {
	Node        string
	CheckID     string
	ServiceID   string
	ServiceName string
	// Unhealthy is the check's status, or "" when it is passing. Most
	// checks pass, and an index entry each (41 MiB for 100,000, beside
	// 183 MiB for the rest of such a catalog) would serve only the query
	// that wants them all, checks in state passing, which scans the table
	// about as fast (ChecksInState, BenchmarkChecksInState).
	Unhealthy string
	Check     *Check
}

func newCheckRow(c *Check) *checkRow {
	r := &checkRow{
		Node: c.Node, CheckID: c.CheckID, ServiceID: c.ServiceID,
		ServiceName: c.ServiceName, Check: c,
	}
	if c.Status != HealthPassing {
		r.Unhealthy = string(c.Status)
	}
	return r
}

// indexRow records the Raft index of the last write to a table.
type indexRow struct {
	Table string
	Index uint64
}

// nodeRows returns the rows of one node (case-insensitive) in the services
// or checks table, through a prefix of the table's id index (lower(Node),
// then the row's ID). The second, empty argument makes the prefix the
// whole node name with the index's terminator after it: with the name
// alone, go-memdb strips the terminator and node "web" would also match
// "web2".
func nodeRows(tx *memdb.Txn, table, node string) (memdb.ResultIterator, error) {
	return tx.Get(table, "id_prefix", node, "")
}

// deleteNodeRows deletes the rows of one node in the services or checks
// table (see nodeRows) and returns how many there were.
func deleteNodeRows(tx *memdb.Txn, table, node string) (int, error) {
	return tx.DeleteAll(table, "id_prefix", node, "")
}

func schema() *memdb.DBSchema {
	lower := func(field string) memdb.Indexer {
		return &memdb.StringFieldIndex{Field: field, Lowercase: true}
	}
	exact := func(field string) memdb.Indexer { return &memdb.StringFieldIndex{Field: field} }
	// The nodes, services and checks tables, which hold a row per
	// instance and check, read their fields without reflection
	// (indexers.go); the smaller ones keep go-memdb's indexers.
	tables := map[string]*memdb.TableSchema{
		tableNodes: {
			Name: tableNodes,
			Indexes: map[string]*memdb.IndexSchema{
				"id":      {Name: "id", Unique: true, Indexer: newFieldIndex("Node", true, func(n *Node) string { return n.Node })},
				"address": {Name: "address", AllowMissing: true, Indexer: newFieldIndex("Address", false, func(n *Node) string { return n.Address })},
			},
		},
		tableServices: {
			Name: tableServices,
			Indexes: map[string]*memdb.IndexSchema{
				// id also finds a node's services (nodeRows): a
				// separate node index would cost an entry per instance
				// for what a prefix of this one answers.
				"id": {Name: "id", Unique: true, Indexer: newPairIndex(
					newFieldIndex("Node", true, func(r *serviceRow) string { return r.Node }),
					newFieldIndex("ID", false, func(r *serviceRow) string { return r.ID }),
				)},
				"service": {Name: "service", Indexer: newFieldIndex("Name", true, func(r *serviceRow) string { return r.Name })},
				// address indexes services with their own address, for PTR.
				"address": {Name: "address", AllowMissing: true, Indexer: newFieldIndex("Address", false, func(r *serviceRow) string { return r.Address })},
			},
		},
		tableChecks: {
			Name: tableChecks,
			Indexes: map[string]*memdb.IndexSchema{
				// id also finds a node's checks (nodeRows), as the
				// services' does.
				"id": {Name: "id", Unique: true, Indexer: newPairIndex(
					newFieldIndex("Node", true, func(r *checkRow) string { return r.Node }),
					newFieldIndex("CheckID", false, func(r *checkRow) string { return r.CheckID }),
				)},
				// service indexes service-level checks by service name,
				// case-insensitively; node-level checks (no ServiceName)
				// are left out.
				"service": {Name: "service", AllowMissing: true, Indexer: newFieldIndex("ServiceName", true, func(r *checkRow) string { return r.ServiceName })},
				// unhealthy indexes checks by status, leaving out
				// passing ones (see checkRow.Unhealthy) and a check
				// without a status (only a store written to without
				// validation holds such).
				"unhealthy": {Name: "unhealthy", AllowMissing: true, Indexer: newFieldIndex("Unhealthy", false, func(r *checkRow) string { return r.Unhealthy })},
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
