package agent

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// healthReads is what both backends give the health endpoints, with the
// same signatures.
type healthReads interface {
	NodeChecks(ctx context.Context, node string) (uint64, []*catalog.Check, error)
	ServiceChecks(ctx context.Context, service string) (uint64, []*catalog.Check, error)
	ChecksInState(ctx context.Context, state string) (uint64, []*catalog.Check, error)
}

var (
	_ healthReads = (*backend)(nil)
	_ healthReads = (*rpcBackend)(nil)
)

// healthRegistrations: web on client2 and client1 with a service check
// each, db on client2, and a node check on each node.
func healthRegistrations() []*catalog.RegisterRequest {
	return []*catalog.RegisterRequest{
		{Node: "client2", Address: "10.0.0.2", Service: &catalog.Service{ID: "web-2", Service: "web", Port: 80},
			Checks: []*catalog.Check{
				{CheckID: "web-http", Type: "http", Status: catalog.HealthCritical, Output: "HTTP GET: 503", ServiceID: "web-2"},
				{CheckID: "gossip", Type: "gossip", Status: catalog.HealthPassing},
			}},
		{Node: "client1", Address: "10.0.0.1", Service: &catalog.Service{ID: "web-1", Service: "web", Port: 80},
			Checks: []*catalog.Check{
				{CheckID: "web-ttl", Type: "ttl", Status: catalog.HealthPassing, ServiceID: "web-1"},
				{CheckID: "gossip", Type: "gossip", Status: catalog.HealthCritical},
			}},
		{Node: "client2", Address: "10.0.0.2", Service: &catalog.Service{ID: "db", Service: "db", Port: 5432},
			Checks: []*catalog.Check{{CheckID: "db-tcp", Type: "tcp", Status: catalog.HealthWarning, ServiceID: "db"}}},
	}
}

// describeChecks renders checks as "node/checkID=status/type".
func describeChecks(checks []*catalog.Check) []string {
	out := []string{}
	for _, c := range checks {
		out = append(out, c.Node+"/"+c.CheckID+"="+string(c.Status)+"/"+c.Type)
	}
	return out
}

// testHealthReads runs the same reads on any backend holding
// healthRegistrations.
func testHealthReads(t *testing.T, b healthReads) {
	t.Helper()
	ctx := testContext(t)
	for _, tc := range []struct {
		name string
		read func() (uint64, []*catalog.Check, error)
		want []string
	}{
		{"NodeChecks(client2)", func() (uint64, []*catalog.Check, error) { return b.NodeChecks(ctx, "CLIENT2") },
			[]string{"client2/db-tcp=warning/tcp", "client2/gossip=passing/gossip", "client2/web-http=critical/http"}},
		{"NodeChecks(nosuch)", func() (uint64, []*catalog.Check, error) { return b.NodeChecks(ctx, "nosuch") }, []string{}},
		{"ServiceChecks(web)", func() (uint64, []*catalog.Check, error) { return b.ServiceChecks(ctx, "web") },
			[]string{"client1/web-ttl=passing/ttl", "client2/web-http=critical/http"}},
		{"ServiceChecks(nosuch)", func() (uint64, []*catalog.Check, error) { return b.ServiceChecks(ctx, "nosuch") }, []string{}},
		{"ChecksInState(critical)", func() (uint64, []*catalog.Check, error) { return b.ChecksInState(ctx, "critical") },
			[]string{"client1/gossip=critical/gossip", "client2/web-http=critical/http"}},
		{"ChecksInState(any)", func() (uint64, []*catalog.Check, error) { return b.ChecksInState(ctx, "any") },
			[]string{"client1/gossip=critical/gossip", "client1/web-ttl=passing/ttl", "client2/db-tcp=warning/tcp",
				"client2/gossip=passing/gossip", "client2/web-http=critical/http"}},
		{"ChecksInState(maintenance)", func() (uint64, []*catalog.Check, error) { return b.ChecksInState(ctx, "maintenance") }, []string{}},
	} {
		idx, checks, err := tc.read()
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := describeChecks(checks); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		if idx == 0 {
			t.Errorf("%s: got index 0, want the checks table's", tc.name)
		}
		for _, c := range checks {
			if c.CreateIndex == 0 || (c.ServiceID != "" && c.ServiceName == "") {
				t.Errorf("%s: check %s/%s: got %+v, want Raft indexes and a service name", tc.name, c.Node, c.CheckID, c)
			}
		}
	}
	for _, tc := range []struct {
		name, field string
		read        func() error
	}{
		{"NodeChecks(bad_name)", "Node", func() error { _, _, err := b.NodeChecks(ctx, "bad_name"); return err }},
		{"ServiceChecks(\"\")", "Service", func() error { _, _, err := b.ServiceChecks(ctx, ""); return err }},
		{"ChecksInState(ok)", "State", func() error { _, _, err := b.ChecksInState(ctx, "ok"); return err }},
	} {
		if fe, ok := errors.AsType[*catalog.FieldError](tc.read()); !ok || fe.Field != tc.field {
			t.Errorf("%s: got err %v, want a FieldError on %s", tc.name, fe, tc.field)
		}
	}
}

func TestHealthBackendReads(t *testing.T) {
	st, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	for i, req := range healthRegistrations() {
		req.Datacenter = "dc1"
		if err := catalog.ValidateRegister(req); err != nil {
			t.Fatal(err)
		}
		if err := st.Register(uint64(i+1), req); err != nil {
			t.Fatal(err)
		}
	}
	testHealthReads(t, &backend{store: st, dc: "dc1"})
}

func TestRPCBackendHealthReads(t *testing.T) {
	b, log := newTestRPCBackend(t, startCatalogServer(t))
	ctx := testContext(t)
	for _, req := range healthRegistrations() {
		if err := b.Register(ctx, req); err != nil {
			t.Fatalf("Register %s: %v", req.Node, err)
		}
	}
	testHealthReads(t, b)

	// A check turning critical shows at a later index.
	idx, _, err := b.ChecksInState(ctx, "critical")
	if err != nil {
		t.Fatal(err)
	}
	req := healthRegistrations()[2]
	req.Checks[0].Status = catalog.HealthCritical
	if err := b.Register(ctx, req); err != nil {
		t.Fatal(err)
	}
	after, checks, err := b.ChecksInState(ctx, "critical")
	if err != nil || after <= idx || len(checks) != 3 {
		t.Errorf("ChecksInState(critical) after db-tcp failed: got %v at index %d, err %v; want 3 checks past %d", describeChecks(checks), after, err, idx)
	}
	// The refusals were the server's, not transport errors: no retry.
	if _, _, err := b.NodeChecks(ctx, "bad_name"); !errors.As(err, new(*rpc.RemoteError)) {
		t.Errorf("NodeChecks(bad_name): got err %v, want a RemoteError", err)
	}
	if got := log.get(); len(got) != 1 {
		t.Errorf("dialed %v, want the one server once", got)
	}
}

func TestRPCBackendHealthReadsNoServers(t *testing.T) {
	b := newRPCBackend(nil, func() []string { return nil }, "dc1", false, nil)
	ctx := testContext(t)
	for name, read := range map[string]func() error{
		"NodeChecks":    func() error { _, _, err := b.NodeChecks(ctx, "n1"); return err },
		"ServiceChecks": func() error { _, _, err := b.ServiceChecks(ctx, "web"); return err },
		"ChecksInState": func() error { _, _, err := b.ChecksInState(ctx, "any"); return err },
	} {
		if err := read(); !errors.Is(err, errNoServers) {
			t.Errorf("%s: got err %v, want errNoServers", name, err)
		}
	}
}
