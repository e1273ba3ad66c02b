package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// autopilotCluster is a Cluster that also answers the Operator autopilot
// methods through fakeDoor: it keeps a configuration as the servers would
// (CAS on ModifyIndex) and reports health.
type autopilotCluster struct {
	fakeCluster
	mu     sync.Mutex
	cfg    rpc.AutopilotConfig
	health rpc.ServerHealthResponse
	asked  []string
}

func (c *autopilotCluster) AutopilotConfiguration(_ context.Context, dc string, stale bool) (*rpc.AutopilotConfig, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, fmt.Sprintf("get %s stale=%v", dc, stale))
	out := c.cfg
	return &out, nil
}

func (c *autopilotCluster) SetAutopilotConfiguration(_ context.Context, dc string, cfg rpc.AutopilotConfig, cas bool) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, fmt.Sprintf("set %s cas=%v", dc, cas))
	if cfg.LastContactThreshold <= 0 {
		return false, &catalog.FieldError{Field: "LastContactThreshold", Reason: "must be positive"}
	}
	if cas && cfg.ModifyIndex != c.cfg.ModifyIndex {
		return false, nil
	}
	cfg.CreateIndex, cfg.ModifyIndex = c.cfg.CreateIndex, c.cfg.ModifyIndex+1
	c.cfg = cfg
	return true, nil
}

func (c *autopilotCluster) ServerHealth(_ context.Context, dc string) (*rpc.ServerHealthResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, "health "+dc)
	out := c.health
	return &out, nil
}

func TestAutopilotConfigurationEndpoint(t *testing.T) {
	cl := &autopilotCluster{cfg: rpc.AutopilotConfig{
		CleanupDeadServers: true, LastContactThreshold: 200 * time.Millisecond, MaxTrailingLogs: 250,
		ServerStabilizationTime: 10 * time.Second, CreateIndex: 4, ModifyIndex: 4,
	}}
	h := newClusterServer(t, cl)

	rec := serve(h, http.MethodGet, "/v1/operator/autopilot/configuration?dc=dc2&stale", "")
	wantStatus(t, rec, http.StatusOK)
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"CleanupDeadServers": true, "LastContactThreshold": "200ms", "MaxTrailingLogs": 250.0, "MinQuorum": 0.0,
		"ServerStabilizationTime": "10s", "RedundancyZoneTag": "", "DisableUpgradeMigration": false, "UpgradeVersionTag": "",
		"CreateIndex": 4.0, "ModifyIndex": 4.0,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GET: got %v, want %v", got, want)
	}
	if idx := rec.Header().Get("X-Consul-Index"); idx != "4" {
		t.Errorf("GET: got X-Consul-Index %q, want 4", idx)
	}

	// Consul's clients send durations as strings or nanoseconds, and the
	// Enterprise fields, which are ignored.
	body := `{"CleanupDeadServers": false, "LastContactThreshold": "1s", "MaxTrailingLogs": 10, "MinQuorum": 3,
		"ServerStabilizationTime": 5000000000, "RedundancyZoneTag": "", "DisableUpgradeMigration": false, "UpgradeVersionTag": "",
		"CreateIndex": 0, "ModifyIndex": 0}`
	rec = serve(h, http.MethodPut, "/v1/operator/autopilot/configuration", body)
	wantStatus(t, rec, http.StatusOK)
	if strings.TrimSpace(rec.Body.String()) != "true" {
		t.Errorf("PUT: got body %q, want true", rec.Body)
	}
	if c := cl.cfg; c.CleanupDeadServers || c.LastContactThreshold != time.Second || c.MaxTrailingLogs != 10 || c.MinQuorum != 3 || c.ServerStabilizationTime != 5*time.Second {
		t.Errorf("after PUT: got %+v", c)
	}

	rec = serve(h, http.MethodPut, "/v1/operator/autopilot/configuration?cas=4", body)
	wantStatus(t, rec, http.StatusOK)
	if strings.TrimSpace(rec.Body.String()) != "false" {
		t.Errorf("PUT with a stale cas: got body %q, want false", rec.Body)
	}
	rec = serve(h, http.MethodPut, "/v1/operator/autopilot/configuration?cas=5", body)
	if strings.TrimSpace(rec.Body.String()) != "true" {
		t.Errorf("PUT with the current cas: got body %q, want true", rec.Body)
	}

	for _, tc := range []struct{ target, body, field string }{
		{"/v1/operator/autopilot/configuration", `{"LastContactThreshold": "0s"}`, "LastContactThreshold"},
		{"/v1/operator/autopilot/configuration", `{"LastContactThreshold": "soon"}`, "LastContactThreshold"},
		{"/v1/operator/autopilot/configuration", `{"LastContactThreshold": "1s", "Bogus": 1}`, "Bogus"},
		{"/v1/operator/autopilot/configuration?cas=x", `{"LastContactThreshold": "1s"}`, "cas"},
	} {
		rec := serve(h, http.MethodPut, tc.target, tc.body)
		wantStatus(t, rec, http.StatusBadRequest)
		if b := errorBody(t, rec); b["field"] != tc.field {
			t.Errorf("PUT %s %s: got %v, want field %s", tc.target, tc.body, b, tc.field)
		}
	}
	wantAsked := []string{"get dc2 stale=true", "set  cas=false", "set  cas=true", "set  cas=true", "set  cas=false"}
	if fmt.Sprint(cl.asked) != fmt.Sprint(wantAsked) {
		t.Errorf("asked %q, want %q", cl.asked, wantAsked)
	}

	rec = serve(h, http.MethodPut, "/v1/operator/autopilot/health", "")
	wantStatus(t, rec, http.StatusMethodNotAllowed)
	if allow := rec.Header().Get("Allow"); allow != "GET" {
		t.Errorf("PUT health: got Allow %q, want GET", allow)
	}
	rec = serve(h, http.MethodGet, "/v1/operator/autopilot/nothing", "")
	wantStatus(t, rec, http.StatusNotFound)
}

func TestAutopilotHealthEndpoint(t *testing.T) {
	since := time.Date(2025, 3, 6, 22, 7, 51, 0, time.UTC)
	servers := []rpc.ServerHealth{
		{ID: "s1", Name: "s1", Address: "10.0.0.1:8300", SerfStatus: "alive", Version: "1.0", Leader: true, LastTerm: 2, LastIndex: 46, Healthy: true, Voter: true, StableSince: since},
		{ID: "s2", Name: "s2", Address: "10.0.0.2:8300", SerfStatus: "alive", Version: "1.0", LastContact: 12*time.Millisecond + 300*time.Microsecond, LastTerm: 2, LastIndex: 46, Healthy: true, Voter: true, StableSince: since},
		{ID: "s3", Name: "s3", Address: "10.0.0.3:8300", SerfStatus: "alive", Version: "1.0", LastContact: 5 * time.Millisecond, LastTerm: 2, LastIndex: 45, Healthy: true, Voter: false, StableSince: since},
	}
	cl := &autopilotCluster{health: rpc.ServerHealthResponse{Healthy: true, FailureTolerance: 0, Servers: servers}}
	h := newClusterServer(t, cl)

	rec := serve(h, http.MethodGet, "/v1/operator/autopilot/health?dc=dc2", "")
	wantStatus(t, rec, http.StatusOK)
	var got struct {
		Healthy          bool
		FailureTolerance int
		Servers          []map[string]any
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Healthy || len(got.Servers) != 3 {
		t.Fatalf("health: got %+v", got)
	}
	s2 := got.Servers[1]
	wantS2 := map[string]any{
		"ID": "s2", "Name": "s2", "Address": "10.0.0.2:8300", "SerfStatus": "alive", "Version": "1.0", "Leader": false,
		"LastContact": "12ms", "LastTerm": 2.0, "LastIndex": 46.0, "Healthy": true, "Voter": true, "StableSince": "2025-03-06T22:07:51Z",
	}
	if fmt.Sprint(s2) != fmt.Sprint(wantS2) {
		t.Errorf("s2: got %v, want %v", s2, wantS2)
	}

	rec = serve(h, http.MethodGet, "/v1/operator/autopilot/state", "")
	wantStatus(t, rec, http.StatusOK)
	var state struct {
		Healthy                    bool
		FailureTolerance           int
		OptimisticFailureTolerance int
		Leader                     string
		Voters                     []string
		Servers                    map[string]struct{ Status, NodeStatus, LastContact string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &state); err != nil {
		t.Fatal(err)
	}
	if state.Leader != "s1" || fmt.Sprint(state.Voters) != "[s1 s2]" || state.OptimisticFailureTolerance != 1 ||
		state.Servers["s1"].Status != "leader" || state.Servers["s2"].Status != "voter" || state.Servers["s3"].Status != "non-voter" ||
		state.Servers["s3"].NodeStatus != "alive" || state.Servers["s3"].LastContact != "5ms" {
		t.Errorf("state: got %+v", state)
	}

	// An unhealthy cluster answers 429, with the same body.
	cl.mu.Lock()
	cl.health.Healthy = false
	cl.health.Servers[2].Healthy, cl.health.Servers[2].LastContact = false, -1
	cl.mu.Unlock()
	rec = serve(h, http.MethodGet, "/v1/operator/autopilot/health?pretty", "")
	wantStatus(t, rec, http.StatusTooManyRequests)
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Healthy || got.Servers[2]["LastContact"] != "-1ns" {
		t.Errorf("unhealthy: got %+v, %v; want Healthy false and s3's last contact -1ns", got, err)
	}
	if !strings.Contains(rec.Body.String(), "\n    ") {
		t.Errorf("?pretty: got %q, want an indented body", rec.Body)
	}
}
