package catalog

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"
)

// PreparedQuery is a named, stored service lookup with failover to other
// datacenters (Consul's prepared query, without templates, Connect or
// peering). It lives in
// the catalog of the datacenter it was defined in and is replicated by
// Raft like the rest of it; executing it may read other datacenters'
// catalogs, never copy them.
type PreparedQuery struct {
	// ID is a UUID chosen by the server that created the query.
	ID string
	// Name is optional and unique within the datacenter; a DNS label, so
	// that <name>.query.<domain> can ask for it. It must not look like a
	// UUID, or lookups by ID or name would be ambiguous.
	Name string
	// Session and Token are kept and given back (Token redacted, see
	// QueryTokenRedacted) but not acted on: the query is not deleted with
	// its session, and it runs with the token of whoever executes it.
	Session string
	Token   string
	Service ServiceQuery
	DNS     QueryDNS
	// Template is kept and given back; only an empty Type is accepted
	// (cairn has no query templates), so RemoveEmptyTags never applies.
	Template QueryTemplate
	RaftIndex
}

// QueryTemplate is Consul's query template settings.
type QueryTemplate struct {
	Type            string
	Regexp          string
	RemoveEmptyTags bool
}

// QueryTokenRedacted stands for a query's Token where the reader may not
// see it (Consul's). Sent back in an update, it keeps the stored token.
const QueryTokenRedacted = "<hidden>"

// ServiceQuery says which instances a prepared query answers with.
type ServiceQuery struct {
	// Service is the service's name, required.
	Service string
	// Tags each must be carried by an instance; a tag written "!tag"
	// must not be. Compared case-insensitively.
	Tags []string
	// OnlyPassing leaves out instances with a warning check too; critical
	// and maintenance instances are always left out.
	OnlyPassing bool
	// Failover says where to look when the local datacenter has no
	// healthy instance.
	Failover QueryFailover
	// Near sorts the local datacenter's answer by the estimated round
	// trip time from a node, nearest first (network coordinates): a node
	// name, or "_agent" for the agent executing the query. "" leaves the
	// catalog's order (which DNS shuffles).
	Near string
	// IgnoreCheckIDs are checks left out when judging an instance's
	// health (an emergency override of a check that lies).
	IgnoreCheckIDs []string
	// NodeMeta and ServiceMeta are key/value pairs the instance's node and
	// service must carry.
	NodeMeta    map[string]string
	ServiceMeta map[string]string
	// Connect asks for Connect-capable instances only; cairn has no
	// Connect, so such a query answers with none (as Consul would where no
	// instance is Connect-capable).
	Connect bool
}

// QueryFailover lists the datacenters a query fails over to, tried in
// order: the NearestN nearest other datacenters, then Datacenters (those
// not already tried); or, instead of both, Targets.
type QueryFailover struct {
	NearestN    int
	Datacenters []string
	Targets     []QueryFailoverTarget
}

// QueryFailoverTarget is one place a query fails over to. cairn has no
// peering, partitions or namespaces: only Datacenter may be set.
type QueryFailoverTarget struct {
	Peer       string
	Datacenter string
	Partition  string
	Namespace  string
}

// QueryDNS holds the DNS settings of a query.
type QueryDNS struct {
	// TTL is the TTL of the query's DNS answers, a Go duration ("10s");
	// empty means the service's TTL as the agent's DNS config gives it.
	TTL string
}

// TTLValue returns the TTL and whether one is set. A TTL that does not
// parse (only a store written without validation holds one) is not set.
func (d QueryDNS) TTLValue() (time.Duration, bool) {
	if d.TTL == "" {
		return 0, false
	}
	ttl, err := time.ParseDuration(d.TTL)
	if err != nil || ttl < 0 {
		return 0, false
	}
	return ttl, true
}

// QueryNearAgent as a ServiceQuery's Near sorts from the agent that
// executes the query.
const QueryNearAgent = "_agent"

// QueryResult is the outcome of executing a prepared query: Consul's
// PreparedQueryExecuteResponse.
type QueryResult struct {
	// Service is the service the query asks for.
	Service string
	// Nodes are the healthy instances matching the query, of the
	// datacenter that answered, sorted by node, then service ID.
	Nodes []ServiceInstance
	// DNS is the query's DNS settings.
	DNS QueryDNS
	// Datacenter is the datacenter the instances are in: the local one,
	// or the failover datacenter that answered. The local one when none
	// did.
	Datacenter string
	// Failovers is how many other datacenters were asked.
	Failovers int
	// Ordered says Nodes are sorted nearest first (the query's Near):
	// answers keep their order instead of shuffling it.
	Ordered bool
}

// QueryOp is what a QueryRequest does.
type QueryOp string

// The operations on prepared queries.
const (
	QueryCreate QueryOp = "create"
	QueryUpdate QueryOp = "update"
	QueryDelete QueryOp = "delete"
)

// QueryRequest creates, updates or deletes one prepared query: the
// command the Raft log carries. For create the ID is already chosen; for
// delete only Query.ID is read.
type QueryRequest struct {
	Op    QueryOp
	Query *PreparedQuery
}

// queryRow is how a query is stored; Name is lowercased for the unique
// index, so names compare as DNS compares them.
type queryRow struct {
	ID    string
	Name  string
	Query *PreparedQuery
}

// IsQueryID reports whether s has the form of a query ID: a UUID in
// lowercase or uppercase hex, 8-4-4-4-12.
func IsQueryID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// NormalizeQuery validates a query definition (not its ID, which the server
// sets) and tidies it: the ID lowercased. It returns a *FieldError naming
// the first bad field in Consul's spelling ("Service.Service",
// "Service.Failover.NearestN").
func NormalizeQuery(q *PreparedQuery) error {
	q.ID = strings.ToLower(q.ID)
	if q.Name != "" {
		if r := ValidLabel(q.Name); r != "" {
			return fieldErr("Name", "%s", r)
		}
		if IsQueryID(q.Name) {
			return fieldErr("Name", "must not have the form of a query ID (a UUID)")
		}
	}
	s := &q.Service
	if s.Service == "" {
		return fieldErr("Service.Service", "is required")
	}
	if r := ValidLabel(s.Service); r != "" {
		return fieldErr("Service.Service", "%s", r)
	}
	if len(s.Tags) > MaxTags {
		return fieldErr("Service.Tags", "at most %d tags are allowed, got %d", MaxTags, len(s.Tags))
	}
	for i, t := range s.Tags {
		if r := ValidLabel(strings.TrimPrefix(t, "!")); r != "" {
			return fieldErr(fmt.Sprintf("Service.Tags[%d]", i), "%s", r)
		}
	}
	if s.Near != "" && s.Near != QueryNearAgent {
		if err := ValidateNodeName("Service.Near", s.Near); err != nil {
			return fmt.Errorf("%w (or %q for the agent executing the query)", err, QueryNearAgent)
		}
	}
	if s.Failover.NearestN < 0 {
		return fieldErr("Service.Failover.NearestN", "must not be negative, got %d", s.Failover.NearestN)
	}
	for i, dc := range s.Failover.Datacenters {
		if r := ValidLabel(dc); r != "" {
			return fieldErr(fmt.Sprintf("Service.Failover.Datacenters[%d]", i), "%s", r)
		}
	}
	if err := validateTargets(&s.Failover); err != nil {
		return err
	}
	for i, id := range s.IgnoreCheckIDs {
		if err := ValidateID(fmt.Sprintf("Service.IgnoreCheckIDs[%d]", i), id); err != nil {
			return err
		}
	}
	if err := ValidateMeta("Service.NodeMeta", s.NodeMeta); err != nil {
		return err
	}
	if err := ValidateMeta("Service.ServiceMeta", s.ServiceMeta); err != nil {
		return err
	}
	if q.Session != "" && !IsQueryID(q.Session) {
		return fieldErr("Session", "%q is not a session ID (a UUID)", q.Session)
	}
	if q.Template.Type != "" {
		return fieldErr("Template.Type", "query templates are not supported by cairn; leave Type empty")
	}
	if q.DNS.TTL != "" {
		ttl, err := time.ParseDuration(q.DNS.TTL)
		if err != nil {
			return fieldErr("DNS.TTL", "%q is not a duration such as \"10s\"", q.DNS.TTL)
		}
		if ttl < 0 {
			return fieldErr("DNS.TTL", "must not be negative, got %s", q.DNS.TTL)
		}
	}
	return nil
}

// validateTargets checks Failover.Targets: datacenters only, and not
// together with NearestN or Datacenters (Consul's rule).
func validateTargets(f *QueryFailover) error {
	if len(f.Targets) == 0 {
		return nil
	}
	if f.NearestN != 0 || len(f.Datacenters) > 0 {
		return fieldErr("Service.Failover.Targets", "cannot be combined with NearestN or Datacenters")
	}
	for i, t := range f.Targets {
		field := fmt.Sprintf("Service.Failover.Targets[%d]", i)
		switch {
		case t.Peer != "":
			return fieldErr(field+".Peer", "cluster peering is not supported by cairn; name a Datacenter")
		case t.Partition != "" || t.Namespace != "":
			return fieldErr(field, "partitions and namespaces are not supported by cairn; name a Datacenter")
		}
		if r := ValidLabel(t.Datacenter); r != "" {
			return fieldErr(field+".Datacenter", "%s", r)
		}
	}
	return nil
}

// Matches reports whether an instance is one the query answers with:
// healthy (passing, or warning unless OnlyPassing) leaving out the checks
// in IgnoreCheckIDs, carrying every tag the query asks for and none it
// negates with "!", and the NodeMeta and ServiceMeta asked for.
func (s *ServiceQuery) Matches(inst ServiceInstance) bool {
	if s.Connect {
		return false
	}
	if len(s.IgnoreCheckIDs) > 0 {
		inst.Checks = slices.DeleteFunc(slices.Clone(inst.Checks), func(c *Check) bool { return slices.Contains(s.IgnoreCheckIDs, c.CheckID) })
	}
	if !inst.Healthy(s.OnlyPassing) {
		return false
	}
	if !hasMeta(inst.Node.Meta, s.NodeMeta) || !hasMeta(inst.Service.Meta, s.ServiceMeta) {
		return false
	}
	for _, t := range s.Tags {
		if neg, ok := strings.CutPrefix(t, "!"); ok {
			if inst.Service.HasTag(neg) {
				return false
			}
		} else if !inst.Service.HasTag(t) {
			return false
		}
	}
	return true
}

// hasMeta reports whether have carries every pair of want.
func hasMeta(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Filter returns the instances of all that the query answers with (see
// Matches), in their order.
func (s *ServiceQuery) Filter(all []ServiceInstance) []ServiceInstance {
	var out []ServiceInstance
	for _, inst := range all {
		if s.Matches(inst) {
			out = append(out, inst)
		}
	}
	return out
}

// ApplyQuery applies a QueryRequest at Raft index idx. A create whose ID
// exists, or a create or update whose name another query holds, is a
// *FieldError ("ID", "Name"); an update or delete of an ID that does not
// exist wraps ErrNotFound. The request is not validated here: servers
// validate before the write enters the log, and the log must replay as
// it was applied.
func (s *Store) ApplyQuery(idx uint64, req *QueryRequest) error {
	if req.Query == nil {
		return fieldErr("Query", "is required")
	}
	st := s.state.Load()
	tx := st.db.Txn(true)
	defer tx.Abort()
	tx.TrackChanges() // for the change log: caches of query answers follow it
	id := strings.ToLower(req.Query.ID)
	raw, err := tx.First(tableQueries, "id", id)
	if err != nil {
		return fmt.Errorf("look up query %q: %w", id, err)
	}
	old, _ := raw.(*queryRow)
	switch req.Op {
	case QueryCreate:
		if old != nil {
			return fieldErr("ID", "query %q exists already", id)
		}
	case QueryUpdate, QueryDelete:
		if old == nil {
			return fmt.Errorf("query %q: %w", id, ErrNotFound)
		}
	default:
		return fieldErr("Op", "must be create, update or delete, got %q", req.Op)
	}
	if req.Op == QueryDelete {
		if err := tx.Delete(tableQueries, old); err != nil {
			return fmt.Errorf("delete query %q: %w", id, err)
		}
	} else if err := insertQuery(tx, idx, id, old, req.Query); err != nil {
		return err
	}
	if err := bumpIndex(tx, tableQueries, idx); err != nil {
		return err
	}
	st.commit(tx, idx)
	return nil
}

func insertQuery(tx *memdb.Txn, idx uint64, id string, old *queryRow, q *PreparedQuery) error {
	name := strings.ToLower(q.Name)
	if name != "" {
		raw, err := tx.First(tableQueries, "name", name)
		if err != nil {
			return fmt.Errorf("look up query name %q: %w", name, err)
		}
		if other, ok := raw.(*queryRow); ok && other.ID != id {
			return fieldErr("Name", "query %q has the name %q already", other.ID, q.Name)
		}
	}
	cp := q.clone()
	cp.ID = id
	cp.CreateIndex, cp.ModifyIndex = idx, idx
	if old != nil {
		cp.CreateIndex = old.Query.CreateIndex
		if cp.Token == QueryTokenRedacted {
			cp.Token = old.Query.Token
		}
	}
	if err := tx.Insert(tableQueries, newQueryRow(cp)); err != nil {
		return fmt.Errorf("insert query %q: %w", id, err)
	}
	return nil
}

// clone returns a deep copy of q.
func (q *PreparedQuery) clone() *PreparedQuery {
	cp := *q
	s := &cp.Service
	s.Tags = slices.Clone(s.Tags)
	s.Failover.Datacenters = slices.Clone(s.Failover.Datacenters)
	s.Failover.Targets = slices.Clone(s.Failover.Targets)
	s.IgnoreCheckIDs = slices.Clone(s.IgnoreCheckIDs)
	s.NodeMeta = maps.Clone(s.NodeMeta)
	s.ServiceMeta = maps.Clone(s.ServiceMeta)
	return &cp
}

// Redacted returns q with its Token replaced by QueryTokenRedacted (q
// itself when it has none), for a reader who may not see it.
func (q *PreparedQuery) Redacted() *PreparedQuery {
	if q.Token == "" {
		return q
	}
	cp := *q
	cp.Token = QueryTokenRedacted
	return &cp
}

func newQueryRow(q *PreparedQuery) *queryRow {
	return &queryRow{ID: strings.ToLower(q.ID), Name: strings.ToLower(q.Name), Query: q}
}

// Queries returns every prepared query, sorted by ID, and the index of the
// queries table.
func (s *Store) Queries(ws WatchSet) (uint64, []*PreparedQuery, error) {
	tx := s.read(ws)
	it, err := tx.Get(tableQueries, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("list queries: %w", err)
	}
	ws.Add(it.WatchCh())
	var out []*PreparedQuery
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*queryRow).Query)
	}
	slices.SortFunc(out, func(a, b *PreparedQuery) int { return cmp.Compare(a.ID, b.ID) })
	return maxIndex(tx, tableQueries), out, nil
}

// Query returns the prepared query with the given ID, or nil when there is
// none, and the index of the queries table.
func (s *Store) Query(ws WatchSet, id string) (uint64, *PreparedQuery, error) {
	return s.lookupQuery(ws, "id", id)
}

// ResolveQuery returns the prepared query whose ID is idOrName, else the
// one whose name it is (case-insensitively), or nil when there is neither.
func (s *Store) ResolveQuery(ws WatchSet, idOrName string) (uint64, *PreparedQuery, error) {
	if IsQueryID(idOrName) {
		idx, q, err := s.lookupQuery(ws, "id", idOrName)
		if err != nil || q != nil {
			return idx, q, err
		}
	}
	return s.lookupQuery(ws, "name", idOrName)
}

func (s *Store) lookupQuery(ws WatchSet, index, key string) (uint64, *PreparedQuery, error) {
	tx := s.read(ws)
	if key == "" {
		return maxIndex(tx, tableQueries), nil, nil
	}
	ch, raw, err := tx.FirstWatch(tableQueries, index, strings.ToLower(key))
	if err != nil {
		return 0, nil, fmt.Errorf("look up query %q: %w", key, err)
	}
	ws.Add(ch)
	var q *PreparedQuery
	if row, ok := raw.(*queryRow); ok {
		q = row.Query
	}
	return maxIndex(tx, tableQueries), q, nil
}
