package catalog_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

const (
	queryID1 = "8f246b77-f3e1-ff88-5b48-8ec93abf3e05"
	queryID2 = "0a1b2c3d-0000-4000-8000-000000000002"
)

func webQuery(id, name string) *catalog.PreparedQuery {
	return &catalog.PreparedQuery{ID: id, Name: name, Service: catalog.ServiceQuery{
		Service: "web", Tags: []string{"v1", "!canary"},
		Failover: catalog.QueryFailover{NearestN: 1, Datacenters: []string{"dc2", "dc3"}},
	}, DNS: catalog.QueryDNS{TTL: "10s"}}
}

func mustApplyQuery(t *testing.T, s *catalog.Store, idx uint64, op catalog.QueryOp, q *catalog.PreparedQuery) {
	t.Helper()
	if err := s.ApplyQuery(idx, &catalog.QueryRequest{Op: op, Query: q}); err != nil {
		t.Fatalf("ApplyQuery(%d, %s, %q): %v", idx, op, q.ID, err)
	}
}

func TestQueryCRUD(t *testing.T) {
	s := newStore(t)
	mustApplyQuery(t, s, 5, catalog.QueryCreate, webQuery(queryID1, "web-nearest"))

	idx, got, err := s.Query(nil, queryID1)
	if err != nil || got == nil {
		t.Fatalf("Query(%s): got %v, %v; want the query", queryID1, got, err)
	}
	if idx != 5 || got.CreateIndex != 5 || got.ModifyIndex != 5 {
		t.Errorf("indexes after create: got table %d, create %d, modify %d; want 5, 5, 5", idx, got.CreateIndex, got.ModifyIndex)
	}
	want := webQuery(queryID1, "web-nearest")
	want.RaftIndex = got.RaftIndex
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Query: got %+v, want %+v", got, want)
	}

	// Found by ID in any case, and by name case-insensitively.
	for _, key := range []string{queryID1, "8F246B77-F3E1-FF88-5B48-8EC93ABF3E05", "web-nearest", "WEB-Nearest"} {
		if _, q, err := s.ResolveQuery(nil, key); err != nil || q == nil || q.ID != queryID1 {
			t.Errorf("ResolveQuery(%q): got %v, %v; want %s", key, q, err, queryID1)
		}
	}
	if _, q, err := s.ResolveQuery(nil, "nothing"); err != nil || q != nil {
		t.Errorf("ResolveQuery(nothing): got %v, %v; want nil, nil", q, err)
	}

	// A second query may not take the first one's name, nor its ID.
	err = s.ApplyQuery(6, &catalog.QueryRequest{Op: catalog.QueryCreate, Query: webQuery(queryID2, "Web-Nearest")})
	if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != "Name" {
		t.Errorf("create with a taken name: got %v, want a FieldError on Name", err)
	}
	err = s.ApplyQuery(6, &catalog.QueryRequest{Op: catalog.QueryCreate, Query: webQuery(queryID1, "other")})
	if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != "ID" {
		t.Errorf("create with a taken ID: got %v, want a FieldError on ID", err)
	}
	mustApplyQuery(t, s, 7, catalog.QueryCreate, webQuery(queryID2, ""))

	// Update keeps CreateIndex and may rename; the old name is free again.
	upd := webQuery(queryID1, "web-renamed")
	upd.Service.OnlyPassing = true
	mustApplyQuery(t, s, 8, catalog.QueryUpdate, upd)
	_, got, _ = s.Query(nil, queryID1)
	if got.Name != "web-renamed" || !got.Service.OnlyPassing || got.CreateIndex != 5 || got.ModifyIndex != 8 {
		t.Errorf("after update: got %+v", got)
	}
	if _, q, _ := s.ResolveQuery(nil, "web-nearest"); q != nil {
		t.Errorf("old name after rename: got %s, want nothing", q.ID)
	}
	err = s.ApplyQuery(9, &catalog.QueryRequest{Op: catalog.QueryUpdate, Query: webQuery("00000000-0000-4000-8000-000000000000", "")})
	if !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("update of an unknown ID: got %v, want ErrNotFound", err)
	}

	idx, all, err := s.Queries(nil)
	if err != nil || len(all) != 2 || all[0].ID != queryID2 || all[1].ID != queryID1 || idx != 8 {
		t.Errorf("Queries: got index %d, %d queries (%v); want index 8, [%s %s]", idx, len(all), err, queryID2, queryID1)
	}

	mustApplyQuery(t, s, 10, catalog.QueryDelete, &catalog.PreparedQuery{ID: queryID1})
	if _, q, _ := s.Query(nil, queryID1); q != nil {
		t.Errorf("after delete: got %+v, want nil", q)
	}
	err = s.ApplyQuery(11, &catalog.QueryRequest{Op: catalog.QueryDelete, Query: &catalog.PreparedQuery{ID: queryID1}})
	if !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("second delete: got %v, want ErrNotFound", err)
	}
	// Query writes do not move the catalog's own index (blocking queries
	// on services are not woken by them).
	if got := s.Index(); got != 0 {
		t.Errorf("Store.Index after query writes: got %d, want 0", got)
	}
}

func TestNormalizeQuery(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(q *catalog.PreparedQuery)
		field string // "" when valid
	}{
		{"valid", func(*catalog.PreparedQuery) {}, ""},
		{"no name", func(q *catalog.PreparedQuery) { q.Name = "" }, ""},
		{"no service", func(q *catalog.PreparedQuery) { q.Service.Service = "" }, "Service.Service"},
		{"service not a label", func(q *catalog.PreparedQuery) { q.Service.Service = "web_1" }, "Service.Service"},
		{"negative NearestN", func(q *catalog.PreparedQuery) { q.Service.Failover.NearestN = -1 }, "Service.Failover.NearestN"},
		{"bad tag", func(q *catalog.PreparedQuery) { q.Service.Tags = []string{"ok", "!"} }, "Service.Tags[1]"},
		{"bad datacenter", func(q *catalog.PreparedQuery) { q.Service.Failover.Datacenters = []string{"dc 2"} }, "Service.Failover.Datacenters[0]"},
		{"name not a label", func(q *catalog.PreparedQuery) { q.Name = "web.query" }, "Name"},
		{"name like an ID", func(q *catalog.PreparedQuery) { q.Name = queryID2 }, "Name"},
		{"bad TTL", func(q *catalog.PreparedQuery) { q.DNS.TTL = "ten" }, "DNS.TTL"},
		{"negative TTL", func(q *catalog.PreparedQuery) { q.DNS.TTL = "-1s" }, "DNS.TTL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := webQuery("", "web")
			tt.edit(q)
			err := catalog.NormalizeQuery(q)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			fe, ok := errors.AsType[*catalog.FieldError](err)
			if !ok || fe.Field != tt.field {
				t.Fatalf("got %v, want a FieldError on %s", err, tt.field)
			}
		})
	}
}

func TestServiceQueryFilter(t *testing.T) {
	inst := func(id string, status catalog.HealthStatus, tags ...string) catalog.ServiceInstance {
		return catalog.ServiceInstance{
			Node:    &catalog.Node{Node: "n-" + id, Address: "10.0.0.1"},
			Service: &catalog.Service{ID: id, Service: "web", Tags: tags},
			Checks:  []*catalog.Check{{CheckID: "c", Status: status}},
		}
	}
	all := []catalog.ServiceInstance{
		inst("a", catalog.HealthPassing, "v1"),
		inst("b", catalog.HealthWarning, "V1"),
		inst("c", catalog.HealthCritical, "v1"),
		inst("d", catalog.HealthPassing, "v1", "canary"),
		inst("e", catalog.HealthPassing, "v2"),
		inst("f", catalog.HealthMaintenance, "v1"),
	}
	ids := func(insts []catalog.ServiceInstance) []string {
		var out []string
		for _, in := range insts {
			out = append(out, in.Service.ID)
		}
		return out
	}
	tests := []struct {
		q    catalog.ServiceQuery
		want []string
	}{
		{catalog.ServiceQuery{Service: "web"}, []string{"a", "b", "d", "e"}},
		{catalog.ServiceQuery{Service: "web", OnlyPassing: true}, []string{"a", "d", "e"}},
		{catalog.ServiceQuery{Service: "web", Tags: []string{"v1"}}, []string{"a", "b", "d"}},
		{catalog.ServiceQuery{Service: "web", Tags: []string{"v1", "!CANARY"}}, []string{"a", "b"}},
		{catalog.ServiceQuery{Service: "web", Tags: []string{"!v1"}}, []string{"e"}},
	}
	for _, tt := range tests {
		if got := ids(tt.q.Filter(all)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Filter(%+v): got %v, want %v", tt.q, got, tt.want)
		}
	}
}

func TestQuerySnapshotRoundTrip(t *testing.T) {
	src := populated(t)
	mustApplyQuery(t, src, 10, catalog.QueryCreate, webQuery(queryID1, "web-nearest"))
	mustApplyQuery(t, src, 11, catalog.QueryCreate, webQuery(queryID2, ""))
	_, want, _ := src.Queries(nil)

	d, err := src.Dump()
	if err != nil {
		t.Fatalf("Dump: %v", err)
	}
	if d.Index != 11 || len(d.Queries) != 2 {
		t.Fatalf("Dump: got index %d, %d queries; want 11, 2", d.Index, len(d.Queries))
	}
	dst := newStore(t)
	if err := dst.Restore(d); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	idx, got, err := dst.Queries(nil)
	if err != nil || !reflect.DeepEqual(got, want) || idx != 11 {
		t.Errorf("Queries after Restore: got index %d, %+v (%v); want 11, %+v", idx, got, err, want)
	}
	if _, q, _ := dst.ResolveQuery(nil, "WEB-NEAREST"); q == nil || q.ID != queryID1 {
		t.Errorf("ResolveQuery by name after Restore: got %v, want %s", q, queryID1)
	}

	// A snapshot from before prepared queries has none, and restores.
	d.Queries = nil
	old := newStore(t)
	if err := old.Restore(d); err != nil {
		t.Fatalf("Restore without queries: %v", err)
	}
	if _, qs, err := old.Queries(nil); err != nil || len(qs) != 0 {
		t.Errorf("Queries after restoring an old snapshot: got %d (%v), want 0", len(qs), err)
	}
}

// A query's Token is given out redacted to those who may not see it, and
// the redacted form sent back in an update keeps the stored token.
func TestQueryTokenRedacted(t *testing.T) {
	s := newStore(t)
	q := webQuery(queryID1, "web")
	q.Token = "11111111-2222-3333-4444-555555555555"
	mustApplyQuery(t, s, 5, catalog.QueryCreate, q)
	_, got, _ := s.Query(nil, queryID1)
	if r := got.Redacted(); r.Token != catalog.QueryTokenRedacted || got.Token != q.Token {
		t.Fatalf("Redacted: got %q (stored %q), want %q (stored unchanged)", r.Token, got.Token, catalog.QueryTokenRedacted)
	}
	upd := got.Redacted()
	mustApplyQuery(t, s, 6, catalog.QueryUpdate, upd)
	if _, got, _ = s.Query(nil, queryID1); got.Token != q.Token {
		t.Errorf("after an update sending the redacted token: got %q, want %q kept", got.Token, q.Token)
	}
}
