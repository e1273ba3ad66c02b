package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/cairndns/cairn/catalog"
)

// Queries is prepared queries, kept by the servers. A Catalog that also
// implements it gets the /v1/query endpoints; without it they answer 404.
// Errors: a *catalog.FieldError for a bad definition (a 400 naming the
// field), catalog.ErrNotFound for an unknown query (a 404).
type Queries interface {
	// ApplyQuery creates (q.ID empty; the new ID is returned), updates or
	// deletes (only q.ID read) a query, once committed.
	ApplyQuery(ctx context.Context, op catalog.QueryOp, q *catalog.PreparedQuery) (string, error)
	// Queries returns the query with ID id, or every query when id is "".
	Queries(ctx context.Context, id string) (uint64, []*catalog.PreparedQuery, error)
	// ExecuteQuery runs the query of datacenter dc ("" for the agent's)
	// whose ID or name is idOrName, failing over as it says.
	ExecuteQuery(ctx context.Context, dc, idOrName string) (*catalog.QueryResult, error)
}

// queryBody is a prepared query as the /v1/query endpoints take and give
// it: Consul's shape, without the fields cairn does not support (a body
// carrying one is refused naming it). The indexes are given out and
// ignored on the way in, so a definition read can be sent back.
type queryBody struct {
	ID          string
	Name        string
	Service     queryServiceBody
	DNS         queryDNSBody
	CreateIndex uint64
	ModifyIndex uint64
}

type queryServiceBody struct {
	Service     string
	Tags        []string
	OnlyPassing bool
	Failover    queryFailoverBody
	Near        string
}

type queryFailoverBody struct {
	NearestN    int
	Datacenters []string
}

type queryDNSBody struct {
	TTL string
}

func (b *queryBody) toQuery() *catalog.PreparedQuery {
	return &catalog.PreparedQuery{
		ID:   b.ID,
		Name: b.Name,
		Service: catalog.ServiceQuery{
			Service: b.Service.Service, Tags: b.Service.Tags, OnlyPassing: b.Service.OnlyPassing,
			Failover: catalog.QueryFailover{NearestN: b.Service.Failover.NearestN, Datacenters: b.Service.Failover.Datacenters},
			Near:     b.Service.Near,
		},
		DNS: catalog.QueryDNS{TTL: b.DNS.TTL},
	}
}

func toQueryBody(q *catalog.PreparedQuery) *queryBody {
	return &queryBody{
		ID: q.ID, Name: q.Name,
		Service: queryServiceBody{
			Service: q.Service.Service, Tags: nonNil(q.Service.Tags), OnlyPassing: q.Service.OnlyPassing,
			Failover: queryFailoverBody{NearestN: q.Service.Failover.NearestN, Datacenters: nonNil(q.Service.Failover.Datacenters)},
			Near:     q.Service.Near,
		},
		DNS:         queryDNSBody{TTL: q.DNS.TTL},
		CreateIndex: q.CreateIndex, ModifyIndex: q.ModifyIndex,
	}
}

// queryExecuteBody is GET /v1/query/<id or name>/execute's answer.
type queryExecuteBody struct {
	Service    string
	Nodes      []*serviceEntry
	DNS        queryDNSBody
	Datacenter string
	Failovers  int
}

func (s *Server) queries() (Queries, error) {
	q, ok := s.catalog.(Queries)
	if !ok {
		return nil, notFound("prepared queries are not served by this agent")
	}
	return q, nil
}

// queryCollection answers GET /v1/query (every query) and POST /v1/query
// (create one; answers {"ID": …}).
func (s *Server) queryCollection(w http.ResponseWriter, r *http.Request) error {
	qs, err := s.queries()
	if err != nil {
		return err
	}
	if r.Method == http.MethodGet {
		return s.writeQueries(w, r, qs, "")
	}
	var body queryBody
	if err := s.decodeBody(w, r, &body); err != nil {
		return err
	}
	if body.ID != "" {
		return badRequest("ID", "is chosen by the server; leave it out to create a query")
	}
	id, err := qs.ApplyQuery(r.Context(), catalog.QueryCreate, body.toQuery())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{ ID string }{id})
	return nil
}

// queryItem answers GET (the query, in a list of one, as Consul does), PUT
// (replace its definition) and DELETE /v1/query/<id>.
func (s *Server) queryItem(w http.ResponseWriter, r *http.Request) error {
	qs, err := s.queries()
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if !catalog.IsQueryID(id) {
		return notFound("no prepared query with ID %q (IDs are UUIDs)", id)
	}
	switch r.Method {
	case http.MethodGet:
		return s.writeQueries(w, r, qs, id)
	case http.MethodDelete:
		if _, err := qs.ApplyQuery(r.Context(), catalog.QueryDelete, &catalog.PreparedQuery{ID: id}); err != nil {
			return err
		}
		w.WriteHeader(http.StatusOK)
		return nil
	}
	var body queryBody
	if err := s.decodeBody(w, r, &body); err != nil {
		return err
	}
	if body.ID != "" && !strings.EqualFold(body.ID, id) {
		return badRequest("ID", "%q differs from the ID in the path, %q", body.ID, id)
	}
	q := body.toQuery()
	q.ID = id
	if _, err := qs.ApplyQuery(r.Context(), catalog.QueryUpdate, q); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) writeQueries(w http.ResponseWriter, r *http.Request, qs Queries, id string) error {
	idx, list, err := qs.Queries(r.Context(), id)
	if err != nil {
		return err
	}
	out := make([]*queryBody, 0, len(list))
	for _, q := range list {
		out = append(out, toQueryBody(q))
	}
	writeRead(w, r, QueryMeta{Index: max(idx, 1)}, out)
	return nil
}

// queryExecute answers GET /v1/query/<id or name>/execute[?dc=…].
func (s *Server) queryExecute(w http.ResponseWriter, r *http.Request) error {
	qs, err := s.queries()
	if err != nil {
		return err
	}
	dc := r.URL.Query().Get("dc")
	if dc != "" {
		if reason := catalog.ValidLabel(dc); reason != "" {
			return badRequest("dc", "%s", reason)
		}
	}
	res, err := qs.ExecuteQuery(r.Context(), strings.ToLower(dc), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := &queryExecuteBody{
		Service: res.Service, Nodes: make([]*serviceEntry, 0, len(res.Nodes)),
		DNS: queryDNSBody{TTL: res.DNS.TTL}, Datacenter: res.Datacenter, Failovers: res.Failovers,
	}
	for _, in := range res.Nodes {
		out.Nodes = append(out.Nodes, toServiceEntry(in))
	}
	writeJSONPretty(w, r, out)
	return nil
}
