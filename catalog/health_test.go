package catalog_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

func serviceChecks(t testing.TB, s *catalog.Store, ws catalog.WatchSet, service string) (uint64, []*catalog.Check) {
	t.Helper()
	idx, checks, err := s.ServiceChecks(ws, service)
	if err != nil {
		t.Fatalf("ServiceChecks(%q): %v", service, err)
	}
	return idx, checks
}

func checksInState(t testing.TB, s *catalog.Store, ws catalog.WatchSet, state catalog.HealthStatus) (uint64, []*catalog.Check) {
	t.Helper()
	idx, checks, err := s.ChecksInState(ws, state)
	if err != nil {
		t.Fatalf("ChecksInState(%q): %v", state, err)
	}
	return idx, checks
}

// checkNames renders checks as "node/checkID".
func checkNames(checks []*catalog.Check) []string {
	out := []string{}
	for _, c := range checks {
		out = append(out, c.Node+"/"+c.CheckID)
	}
	return out
}

// healthFixture: web on node-b (two checks) and node-A (one), db on node-b,
// and a node check on each node; registered out of order, so the reads
// must sort. The last write is at index 6.
//
//	node-b  gossip (passing, node)   web-z (critical, web)  web-a (passing, web)  db-1 (warning, db)
//	node-A  gossip (critical, node)  web-x (warning, web)
func healthFixture(t *testing.T) *catalog.Store {
	t.Helper()
	s := newStore(t)
	withType := func(c *catalog.Check, typ string) *catalog.Check { c.Type = typ; return c }
	r := svcReq("node-b", "10.0.0.2", "web", "web")
	r.Checks = []*catalog.Check{
		withType(check("web-z", "web", catalog.HealthCritical), "http"),
		withType(check("gossip", "", catalog.HealthPassing), "gossip"),
	}
	mustRegister(t, s, 1, r)
	r = svcReq("node-A", "10.0.0.1", "web", "WEB")
	r.Checks = []*catalog.Check{withType(check("web-x", "web", catalog.HealthWarning), "ttl")}
	mustRegister(t, s, 2, r)
	mustRegister(t, s, 3, checkReq("node-A", withType(check("gossip", "", catalog.HealthCritical), "gossip")))
	r = svcReq("node-b", "10.0.0.2", "db", "db")
	r.Checks = []*catalog.Check{check("db-1", "db", catalog.HealthWarning)}
	mustRegister(t, s, 4, r)
	mustRegister(t, s, 5, checkReq("node-b", withType(check("web-a", "web", catalog.HealthPassing), "tcp")))
	mustRegister(t, s, 6, svcReq("node-c", "10.0.0.3", "cache", "cache"))
	return s
}

func TestServiceChecks(t *testing.T) {
	s := healthFixture(t)
	tests := []struct {
		service string
		want    []string
	}{
		{"web", []string{"node-A/web-x", "node-b/web-a", "node-b/web-z"}},
		{"WEB", []string{"node-A/web-x", "node-b/web-a", "node-b/web-z"}},
		{"db", []string{"node-b/db-1"}},
		{"cache", []string{}}, // an instance without checks
		{"ghost", []string{}},
	}
	for _, tt := range tests {
		idx, checks := serviceChecks(t, s, nil, tt.service)
		if got := checkNames(checks); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ServiceChecks(%q): got %v, want %v", tt.service, got, tt.want)
		}
		if idx != 5 {
			t.Errorf("ServiceChecks(%q) index: got %d, want 5 (the checks table's)", tt.service, idx)
		}
	}
	// The checks are the stored ones, every field included.
	_, checks := serviceChecks(t, s, nil, "web")
	if c := checks[0]; c.Type != "ttl" || c.Status != catalog.HealthWarning || c.ServiceID != "web" || c.ServiceName != "WEB" || c.CreateIndex != 2 {
		t.Errorf("node-A/web-x: got %+v, want type ttl, warning, of service web named WEB, created at 2", c)
	}
}

func TestChecksInState(t *testing.T) {
	s := healthFixture(t)
	tests := []struct {
		state catalog.HealthStatus
		want  []string
	}{
		{catalog.HealthAny, []string{"node-A/gossip", "node-A/web-x", "node-b/db-1", "node-b/gossip", "node-b/web-a", "node-b/web-z"}},
		{catalog.HealthPassing, []string{"node-b/gossip", "node-b/web-a"}},
		{catalog.HealthWarning, []string{"node-A/web-x", "node-b/db-1"}},
		{catalog.HealthCritical, []string{"node-A/gossip", "node-b/web-z"}},
		{catalog.HealthMaintenance, []string{}},
	}
	for _, tt := range tests {
		idx, checks := checksInState(t, s, nil, tt.state)
		if got := checkNames(checks); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ChecksInState(%q): got %v, want %v", tt.state, got, tt.want)
		}
		if idx != 5 {
			t.Errorf("ChecksInState(%q) index: got %d, want 5", tt.state, idx)
		}
	}
	for _, bad := range []catalog.HealthStatus{"", "Passing", "ok", "ANY"} {
		_, _, err := s.ChecksInState(nil, bad)
		if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != "State" {
			t.Errorf("ChecksInState(%q): got err %v, want a FieldError on State", bad, err)
		}
	}
}

func TestNodeChecksSorted(t *testing.T) {
	s := healthFixture(t)
	tests := []struct {
		node string
		want []string
	}{
		{"node-b", []string{"node-b/db-1", "node-b/gossip", "node-b/web-a", "node-b/web-z"}},
		{"NODE-A", []string{"node-A/gossip", "node-A/web-x"}},
		{"node-c", []string{}},
		{"ghost", []string{}},
	}
	for _, tt := range tests {
		_, checks := nodeChecks(t, s, tt.node)
		if got := checkNames(checks); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("NodeChecks(%q): got %v, want %v", tt.node, got, tt.want)
		}
	}
}

// TestChecksSortedAcrossNodes: node names compare case-insensitively, and
// a shorter name before a longer one it prefixes.
func TestChecksSortedAcrossNodes(t *testing.T) {
	s := newStore(t)
	for i, node := range []string{"b", "A", "ab", "Aa", "a1"} {
		r := nodeReq(node, fmt.Sprintf("10.0.0.%d", i+1))
		r.Checks = []*catalog.Check{check("z", "", catalog.HealthPassing), check("m", "", catalog.HealthPassing)}
		mustRegister(t, s, uint64(i+1), r)
	}
	_, checks := checksInState(t, s, nil, catalog.HealthPassing)
	want := []string{"A/m", "A/z", "a1/m", "a1/z", "Aa/m", "Aa/z", "ab/m", "ab/z", "b/m", "b/z"}
	if got := checkNames(checks); !reflect.DeepEqual(got, want) {
		t.Errorf("ChecksInState(passing): got %v, want %v", got, want)
	}
}

// TestServiceChecksFollowRename: a service renamed without its checks
// re-sent takes them along to its new name.
func TestServiceChecksFollowRename(t *testing.T) {
	s := healthFixture(t)
	r := svcReq("node-A", "10.0.0.1", "web", "www")
	mustRegister(t, s, 10, r)
	if _, checks := serviceChecks(t, s, nil, "www"); !reflect.DeepEqual(checkNames(checks), []string{"node-A/web-x"}) {
		t.Errorf("ServiceChecks(www): got %v, want [node-A/web-x]", checkNames(checks))
	}
	if _, checks := serviceChecks(t, s, nil, "web"); !reflect.DeepEqual(checkNames(checks), []string{"node-b/web-a", "node-b/web-z"}) {
		t.Errorf("ServiceChecks(web): got %v, want node-b's only", checkNames(checks))
	}
}

func TestWatchHealthReads(t *testing.T) {
	reads := map[string]func(t *testing.T, s *catalog.Store, ws catalog.WatchSet){
		"ServiceChecks(web)": func(t *testing.T, s *catalog.Store, ws catalog.WatchSet) { serviceChecks(t, s, ws, "web") },
		"ChecksInState(critical)": func(t *testing.T, s *catalog.Store, ws catalog.WatchSet) {
			checksInState(t, s, ws, catalog.HealthCritical)
		},
		"ChecksInState(any)": func(t *testing.T, s *catalog.Store, ws catalog.WatchSet) { checksInState(t, s, ws, catalog.HealthAny) },
		// Passing checks are found by a scan of the table (they have no
		// index entry), so this watch fires as that of any does.
		"ChecksInState(passing)": func(t *testing.T, s *catalog.Store, ws catalog.WatchSet) {
			checksInState(t, s, ws, catalog.HealthPassing)
		},
		"NodeChecks(node-b)": func(t *testing.T, s *catalog.Store, ws catalog.WatchSet) {
			if _, _, err := s.NodeChecks(ws, "node-b"); err != nil {
				t.Fatal(err)
			}
		},
	}
	tests := []struct {
		name  string
		write func(t *testing.T, s *catalog.Store)
		fire  map[string]bool // by read; absent means false
	}{
		{"a web check turns critical", func(t *testing.T, s *catalog.Store) {
			mustRegister(t, s, 10, checkReq("node-b", check("web-a", "web", catalog.HealthCritical)))
		}, map[string]bool{"ServiceChecks(web)": true, "ChecksInState(critical)": true, "ChecksInState(any)": true, "ChecksInState(passing)": true, "NodeChecks(node-b)": true}},
		{"a critical web check recovers", func(t *testing.T, s *catalog.Store) {
			mustRegister(t, s, 10, checkReq("node-b", check("web-z", "web", catalog.HealthPassing)))
		}, map[string]bool{"ServiceChecks(web)": true, "ChecksInState(critical)": true, "ChecksInState(any)": true, "ChecksInState(passing)": true, "NodeChecks(node-b)": true}},
		{"a web check's output changes", func(t *testing.T, s *catalog.Store) {
			c := check("web-x", "web", catalog.HealthWarning)
			c.Type, c.Output = "ttl", "slow"
			mustRegister(t, s, 10, checkReq("node-A", c))
		}, map[string]bool{"ServiceChecks(web)": true, "ChecksInState(any)": true, "ChecksInState(passing)": true}},
		{"a web check is added on a new node", func(t *testing.T, s *catalog.Store) {
			r := svcReq("node-d", "10.0.0.4", "web", "web")
			r.Checks = []*catalog.Check{check("web-d", "web", catalog.HealthWarning)}
			mustRegister(t, s, 10, r)
		}, map[string]bool{"ServiceChecks(web)": true, "ChecksInState(any)": true, "ChecksInState(passing)": true}},
		{"a web instance is deregistered", func(t *testing.T, s *catalog.Store) {
			mustDeregister(t, s, 10, &catalog.DeregisterRequest{Node: "node-A", ServiceID: "web"})
		}, map[string]bool{"ServiceChecks(web)": true, "ChecksInState(any)": true, "ChecksInState(passing)": true}},
		{"a node check turns critical", func(t *testing.T, s *catalog.Store) {
			mustRegister(t, s, 10, checkReq("node-b", check("gossip", "", catalog.HealthCritical)))
		}, map[string]bool{"ChecksInState(critical)": true, "ChecksInState(any)": true, "ChecksInState(passing)": true, "NodeChecks(node-b)": true}},
		{"a db check changes", func(t *testing.T, s *catalog.Store) {
			mustRegister(t, s, 10, checkReq("node-b", check("db-1", "db", catalog.HealthPassing)))
		}, map[string]bool{"ChecksInState(any)": true, "ChecksInState(passing)": true, "NodeChecks(node-b)": true}},
		{"identical re-register of a web check", func(t *testing.T, s *catalog.Store) {
			c := check("web-z", "web", catalog.HealthCritical)
			c.Type = "http"
			mustRegister(t, s, 10, checkReq("node-b", c))
		}, nil},
		{"a service without checks", func(t *testing.T, s *catalog.Store) {
			mustRegister(t, s, 10, svcReq("node-d", "10.0.0.4", "api", "api"))
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := healthFixture(t)
			sets := map[string]catalog.WatchSet{}
			for name, read := range reads {
				ws := catalog.NewWatchSet()
				read(t, s, ws)
				sets[name] = ws
			}
			tt.write(t, s)
			for name, ws := range sets {
				want := tt.fire[name]
				wait := fireWait
				if !want {
					wait = quietWait
				}
				if got := fired(t, ws, wait); got != want {
					t.Errorf("watch of %s fired: got %v, want %v", name, got, want)
				}
			}
		})
	}
}
