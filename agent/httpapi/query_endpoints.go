package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// queryBody is a prepared query as the /v1/query endpoints take and give
// it: Consul's shape (catalog.PreparedQuery says which fields cairn acts
// on and which it only keeps). The indexes are given out and ignored on
// the way in, so a definition read can be sent back. Lists read back as
// null when unset, as Consul's: its client compares a definition read
// with the one it sent.
type queryBody struct {
	ID          string
	Name        string
	Session     string
	Token       string
	Service     queryServiceBody
	DNS         catalog.QueryDNS
	Template    catalog.QueryTemplate
	CreateIndex uint64
	ModifyIndex uint64
}

type queryServiceBody struct {
	Service        string
	Tags           []string
	OnlyPassing    bool
	Failover       catalog.QueryFailover
	Near           string
	IgnoreCheckIDs []string
	NodeMeta       map[string]string
	ServiceMeta    map[string]string
	Connect        bool
}

func (b *queryBody) toQuery() *catalog.PreparedQuery {
	return &catalog.PreparedQuery{
		ID: b.ID, Name: b.Name, Session: b.Session, Token: b.Token,
		Service: catalog.ServiceQuery{
			Service: b.Service.Service, Tags: b.Service.Tags, OnlyPassing: b.Service.OnlyPassing,
			Failover: b.Service.Failover, Near: b.Service.Near, IgnoreCheckIDs: b.Service.IgnoreCheckIDs,
			NodeMeta: b.Service.NodeMeta, ServiceMeta: b.Service.ServiceMeta, Connect: b.Service.Connect,
		},
		DNS: b.DNS, Template: b.Template,
	}
}

func toQueryBody(q *catalog.PreparedQuery) *queryBody {
	return &queryBody{
		ID: q.ID, Name: q.Name, Session: q.Session, Token: q.Token,
		Service: queryServiceBody{
			Service: q.Service.Service, Tags: q.Service.Tags, OnlyPassing: q.Service.OnlyPassing,
			Failover: q.Service.Failover, Near: q.Service.Near, IgnoreCheckIDs: q.Service.IgnoreCheckIDs,
			NodeMeta: q.Service.NodeMeta, ServiceMeta: q.Service.ServiceMeta, Connect: q.Service.Connect,
		},
		DNS: q.DNS, Template: q.Template,
		CreateIndex: q.CreateIndex, ModifyIndex: q.ModifyIndex,
	}
}

// queryExecuteBody is GET /v1/query/<id or name>/execute's answer.
type queryExecuteBody struct {
	Service    string
	Nodes      []*serviceEntry
	DNS        catalog.QueryDNS
	Datacenter string
	Failovers  int
}

// applyQuery creates (q.ID empty; the new ID is returned), updates or
// deletes (only q.ID read) a query in the agent's datacenter, once
// committed. A bad definition is a *catalog.FieldError from the servers,
// an unknown query catalog.ErrNotFound.
func (s *Server) applyQuery(ctx context.Context, op catalog.QueryOp, q *catalog.PreparedQuery) (string, error) {
	var reply rpc.PreparedQueryApplyResponse
	args := &rpc.PreparedQueryApplyRequest{WriteRequest: rpc.WriteRequest{Datacenter: s.cfg.Datacenter}, Op: op, Query: *q}
	if err := s.door.RPC(ctx, rpc.MethodPreparedQueryApply, args, &reply); err != nil {
		return "", err
	}
	return reply.ID, nil
}

// queryCollection answers GET /v1/query (every query) and POST /v1/query
// (create one; answers {"ID": …}).
func (s *Server) queryCollection(w http.ResponseWriter, r *http.Request) error {
	if r.Method == http.MethodGet {
		return s.writeQueries(w, r, "")
	}
	var body queryBody
	if err := s.decodeBody(w, r, &body); err != nil {
		return err
	}
	if body.ID != "" {
		return badRequest("ID", "is chosen by the server; leave it out to create a query")
	}
	id, err := s.applyQuery(r.Context(), catalog.QueryCreate, body.toQuery())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{ ID string }{id})
	return nil
}

// queryItem answers GET (the query, in a list of one, as Consul does), PUT
// (replace its definition) and DELETE /v1/query/<id>.
func (s *Server) queryItem(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if !catalog.IsQueryID(id) {
		return notFound("no prepared query with ID %q (IDs are UUIDs)", id)
	}
	switch r.Method {
	case http.MethodGet:
		return s.writeQueries(w, r, id)
	case http.MethodDelete:
		if _, err := s.applyQuery(r.Context(), catalog.QueryDelete, &catalog.PreparedQuery{ID: id}); err != nil {
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
	if _, err := s.applyQuery(r.Context(), catalog.QueryUpdate, q); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// writeQueries answers the query with ID id, or every query when id is
// "", read from the leader (not stale), so that a query just defined
// through this agent is found.
func (s *Server) writeQueries(w http.ResponseWriter, r *http.Request, id string) error {
	var reply rpc.PreparedQueriesResponse
	opts := rpc.QueryOptions{Datacenter: s.cfg.Datacenter}
	var err error
	if id != "" {
		err = s.door.RPC(r.Context(), rpc.MethodPreparedQueryGet, &rpc.PreparedQueryGetRequest{QueryOptions: opts, QueryID: id}, &reply)
	} else {
		err = s.door.RPC(r.Context(), rpc.MethodPreparedQueryList, &rpc.PreparedQueryListRequest{QueryOptions: opts}, &reply)
	}
	if err != nil {
		return err
	}
	out := make([]*queryBody, 0, len(reply.Queries))
	for _, q := range reply.Queries {
		out = append(out, toQueryBody(q))
	}
	writeRead(w, r, rpc.QueryMeta{Index: max(reply.Index, 1)}, out)
	return nil
}

// queryExecute answers GET /v1/query/<id or name>/execute[?dc=…]: the
// query of that datacenter (the agent's by default) run by its leader,
// failing over as it says.
func (s *Server) queryExecute(w http.ResponseWriter, r *http.Request) error {
	dc := r.URL.Query().Get("dc")
	if dc != "" {
		if reason := catalog.ValidLabel(dc); reason != "" {
			return badRequest("dc", "%s", reason)
		}
	}
	var reply rpc.PreparedQueryExecuteResponse
	args := &rpc.PreparedQueryExecuteRequest{QueryOptions: rpc.QueryOptions{Datacenter: strings.ToLower(dc)},
		QueryIDOrName: r.PathValue("id"), Agent: s.cfg.NodeName}
	if err := s.door.RPC(r.Context(), rpc.MethodPreparedQueryExecute, args, &reply); err != nil {
		return err
	}
	res := &reply.Result
	out := &queryExecuteBody{
		Service: res.Service, Nodes: make([]*serviceEntry, 0, len(res.Nodes)),
		DNS: res.DNS, Datacenter: res.Datacenter, Failovers: res.Failovers,
	}
	for _, in := range res.Nodes {
		out.Nodes = append(out.Nodes, toServiceEntry(in))
	}
	writeJSONPretty(w, r, out)
	return nil
}
