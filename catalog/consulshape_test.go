package catalog_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

// TestRegisterCreateMissingNode: a SkipNodeUpdate registration of a node
// not in the catalog creates it, without an address when none is given, as
// Consul's does, when the servers marked it so (CreateMissingNode); an
// entry written before the mark existed still fails as it did, so a log
// replays to the same catalog.
func TestRegisterCreateMissingNode(t *testing.T) {
	s := newStore(t)
	req := svcReq("node1", "", "web", "web", "v1")
	req.SkipNodeUpdate = true
	if err := s.Register(10, req); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("unmarked entry: got %v, want ErrNotFound as before", err)
	}

	req.CreateMissingNode = true
	req.NodeMeta = map[string]string{"env": "prod"}
	mustRegister(t, s, 11, req)
	n := getNode(t, s, "node1")
	if n == nil || n.Address != "" || n.Meta["env"] != "prod" || n.CreateIndex != 11 {
		t.Fatalf("node: got %+v, want node1 created at 11 without an address, with its meta", n)
	}
	if _, svcs := nodeServices(t, s, "node1"); len(svcs) != 1 || svcs[0].ID != "web" {
		t.Errorf("services: got %v, want web", svcs)
	}

	// The node's own registration, later, gives it its address; a
	// SkipNodeUpdate one leaves it as it is again.
	mustRegister(t, s, 12, nodeReq("node1", "10.0.0.1"))
	req.Service.Port = 81
	mustRegister(t, s, 13, req)
	if n := getNode(t, s, "node1"); n.Address != "10.0.0.1" || n.ModifyIndex != 12 {
		t.Errorf("node after a SkipNodeUpdate: got %+v, want 10.0.0.1 modified at 12", n)
	}
}

// TestServiceEnableTagOverrideKept: the flag is stored, given back, and a
// change of it alone is a change of the service.
func TestServiceEnableTagOverrideKept(t *testing.T) {
	s := newStore(t)
	req := svcReq("node1", "10.0.0.1", "web", "web")
	req.Service.EnableTagOverride = true
	mustRegister(t, s, 10, req)
	if _, svcs := nodeServices(t, s, "node1"); len(svcs) != 1 || !svcs[0].EnableTagOverride {
		t.Fatalf("services: got %+v, want web with EnableTagOverride", svcs)
	}
	req = svcReq("node1", "10.0.0.1", "web", "web")
	mustRegister(t, s, 11, req)
	if _, svcs := nodeServices(t, s, "node1"); svcs[0].EnableTagOverride || svcs[0].ModifyIndex != 11 {
		t.Errorf("after turning it off: got %+v, want it off, modified at 11", svcs[0])
	}
}

// TestCheckServiceTagsFollowService: a service's checks carry its tags
// (Consul's HealthCheck.ServiceTags), whatever the writer sent, and follow
// the service when its tags change; a node's checks carry none.
func TestCheckServiceTagsFollowService(t *testing.T) {
	s := newStore(t)
	req := svcReq("node1", "10.0.0.1", "web", "web", "a", "b")
	c := check("web-http", "web", catalog.HealthPassing)
	c.ServiceTags = []string{"forged"}
	req.Checks = []*catalog.Check{c, check("node-ok", "", catalog.HealthPassing)}
	mustRegister(t, s, 10, req)
	tagsOf := func() map[string][]string {
		_, checks := nodeChecks(t, s, "node1")
		out := map[string][]string{}
		for _, c := range checks {
			out[c.CheckID] = c.ServiceTags
		}
		return out
	}
	got := tagsOf()
	if !slices.Equal(got["web-http"], []string{"a", "b"}) || got["node-ok"] != nil {
		t.Fatalf("ServiceTags: got %v, want web-http [a b], node-ok none", got)
	}

	req = svcReq("node1", "10.0.0.1", "web", "web", "c")
	mustRegister(t, s, 11, req)
	if got := tagsOf(); !slices.Equal(got["web-http"], []string{"c"}) {
		t.Errorf("ServiceTags after the service's tags changed: got %v, want [c]", got["web-http"])
	}
	_, checks := nodeChecks(t, s, "node1")
	for _, c := range checks {
		if c.CheckID == "web-http" && c.ModifyIndex != 11 {
			t.Errorf("web-http ModifyIndex: got %d, want 11 (its tags changed)", c.ModifyIndex)
		}
	}
}

// TestRestoreFillsCheckServiceTags: a snapshot from a release whose checks
// had no ServiceTags restores with them set from the services.
func TestRestoreFillsCheckServiceTags(t *testing.T) {
	s := newStore(t)
	req := svcReq("node1", "10.0.0.1", "web", "web", "a")
	req.Checks = []*catalog.Check{check("web-http", "web", catalog.HealthPassing)}
	mustRegister(t, s, 10, req)
	d, err := s.Dump()
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range d.Checks {
		cp := *c
		cp.ServiceTags = nil // as an older release wrote it
		d.Checks[i] = &cp
	}
	r := newStore(t)
	if err := r.Restore(d); err != nil {
		t.Fatal(err)
	}
	_, checks := nodeChecks(t, r, "node1")
	if len(checks) != 1 || !slices.Equal(checks[0].ServiceTags, []string{"a"}) {
		t.Errorf("restored checks: got %+v, want web-http with ServiceTags [a]", checks)
	}
}

// TestChecksInStateMaintenance: maintenance checks are critical, of Type
// maintenance (Consul's); asked for by the state "maintenance" they are
// found with those older agents wrote in the status "maintenance", and
// "critical" finds the new ones.
func TestChecksInStateMaintenance(t *testing.T) {
	s := newStore(t)
	mustRegister(t, s, 10, svcReq("node1", "10.0.0.1", "web", "web"))
	maint := check(catalog.ServiceMaintenancePrefix+"web", "web", catalog.HealthCritical)
	maint.Type = catalog.CheckTypeMaintenance
	legacy := check(catalog.NodeMaintenanceCheckID, "", catalog.HealthMaintenance)
	legacy.Type = catalog.CheckTypeMaintenance
	mustRegister(t, s, 11, checkReq("node1", maint, legacy, check("down", "", catalog.HealthCritical)))

	ids := func(state catalog.HealthStatus) []string {
		_, checks, err := s.ChecksInState(nil, state)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range checks {
			out = append(out, c.CheckID)
		}
		return out
	}
	if got, want := ids(catalog.HealthMaintenance), []string{"_node_maintenance", "_service_maintenance:web"}; !slices.Equal(got, want) {
		t.Errorf("maintenance: got %v, want %v", got, want)
	}
	if got, want := ids(catalog.HealthCritical), []string{"_service_maintenance:web", "down"}; !slices.Equal(got, want) {
		t.Errorf("critical: got %v, want %v", got, want)
	}
}

// TestServiceKindAndProxyKept: Consul's Kind and the proxy's configuration
// are kept as registered, checked for being one of Consul's kinds and
// bounded JSON, and a change of either is a change of the service.
func TestServiceKindAndProxyKept(t *testing.T) {
	s := newStore(t)
	req := svcReq("node1", "10.0.0.1", "web-proxy", "web-proxy")
	req.Service.Kind, req.Service.Proxy = "connect-proxy", []byte(`{"DestinationServiceName":"web"}`)
	if err := catalog.ValidateRegister(req); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, s, 10, req)
	_, svcs := nodeServices(t, s, "node1")
	if svcs[0].Kind != "connect-proxy" || string(svcs[0].Proxy) != `{"DestinationServiceName":"web"}` {
		t.Fatalf("service: got kind %q proxy %s", svcs[0].Kind, svcs[0].Proxy)
	}
	req.Service.Proxy = []byte(`{"DestinationServiceName":"api"}`)
	mustRegister(t, s, 11, req)
	if _, svcs := nodeServices(t, s, "node1"); svcs[0].ModifyIndex != 11 {
		t.Errorf("a new proxy configuration: ModifyIndex got %d, want 11", svcs[0].ModifyIndex)
	}

	for _, tc := range []struct {
		kind, proxy, field string
	}{
		{"sidecar", "", "Kind"},
		{"connect-proxy", "{not json", "Proxy"},
		{"connect-proxy", `"` + strings.Repeat("x", catalog.MaxProxyBytes) + `"`, "Proxy"},
	} {
		r := svcReq("node1", "10.0.0.1", "p", "p")
		r.Service.Kind = tc.kind
		if tc.proxy != "" {
			r.Service.Proxy = []byte(tc.proxy)
		}
		var fe *catalog.FieldError
		if err := catalog.ValidateRegister(r); !errors.As(err, &fe) || fe.Field != "Service."+tc.field {
			t.Errorf("kind %q proxy %.20q: got %v, want a FieldError on Service.%s", tc.kind, tc.proxy, err, tc.field)
		}
	}
}
