package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/api"
)

func TestAutopilot(t *testing.T) {
	var mu sync.Mutex
	var seen []string // "METHOD path?query body"
	healthy := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" "+string(body))
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/operator/autopilot/configuration" && r.Method == http.MethodGet:
			io.WriteString(w, `{"CleanupDeadServers": true, "LastContactThreshold": "200ms", "MaxTrailingLogs": 250, "MinQuorum": 0,
				"ServerStabilizationTime": "10s", "RedundancyZoneTag": "", "CreateIndex": 4, "ModifyIndex": 9}`)
		case r.URL.Path == "/v1/operator/autopilot/configuration":
			if r.URL.Query().Get("cas") == "8" {
				io.WriteString(w, "false")
				return
			}
			io.WriteString(w, "true")
		case r.URL.Path == "/v1/operator/autopilot/health":
			if !healthy {
				w.WriteHeader(http.StatusTooManyRequests)
			}
			io.WriteString(w, `{"Healthy": `+map[bool]string{true: "true", false: "false"}[healthy]+`, "FailureTolerance": 1, "Servers": [
				{"ID": "s1", "Name": "s1", "Address": "10.0.0.1:8300", "SerfStatus": "alive", "Version": "1.0", "Leader": true,
				 "LastContact": "0s", "LastTerm": 2, "LastIndex": 46, "Healthy": true, "Voter": true, "StableSince": "2025-03-06T22:07:51Z"},
				{"ID": "s2", "Name": "s2", "Address": "10.0.0.2:8300", "SerfStatus": "failed", "Version": "", "Leader": false,
				 "LastContact": "-1ns", "LastTerm": 0, "LastIndex": 0, "Healthy": false, "Voter": true, "StableSince": "2025-03-06T22:08:00Z",
				 "StorageError": "write raft log: no space left on device"}]}`)
		case r.URL.Path == "/v1/operator/autopilot/state":
			io.WriteString(w, `{"Healthy": true, "FailureTolerance": 1, "OptimisticFailureTolerance": 1, "Leader": "s1", "Voters": ["s1"],
				"Servers": {"s1": {"ID": "s1", "Status": "leader", "LastContact": "0s", "NodeType": "voter"}}}`)
		default:
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error": "boom"}`)
		}
	}))
	defer srv.Close()
	c, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	op := c.Operator()

	conf, err := op.AutopilotGetConfiguration(ctx, &api.QueryOptions{Datacenter: "dc2", AllowStale: true})
	if err != nil || !conf.CleanupDeadServers || time.Duration(conf.LastContactThreshold) != 200*time.Millisecond ||
		time.Duration(conf.ServerStabilizationTime) != 10*time.Second || conf.MaxTrailingLogs != 250 || conf.ModifyIndex != 9 {
		t.Fatalf("AutopilotGetConfiguration: got %+v, %v", conf, err)
	}
	conf.MinQuorum = 3
	if err := op.AutopilotSetConfiguration(ctx, conf); err != nil {
		t.Errorf("AutopilotSetConfiguration: %v", err)
	}
	conf.ModifyIndex = 8
	if ok, err := op.AutopilotCASConfiguration(ctx, conf); err != nil || ok {
		t.Errorf("AutopilotCASConfiguration with a stale index: got %v, %v; want false", ok, err)
	}

	h, err := op.AutopilotServerHealth(ctx)
	if err != nil || !h.Healthy || len(h.Servers) != 2 || !h.Servers[0].Leader || h.Servers[1].LastContact != -1 ||
		!h.Servers[0].StableSince.Equal(time.Date(2025, 3, 6, 22, 7, 51, 0, time.UTC)) {
		t.Errorf("AutopilotServerHealth: got %+v, %v", h, err)
	}
	mu.Lock()
	healthy = false
	mu.Unlock()
	if h, err := op.AutopilotServerHealth(ctx); err != nil || h.Healthy || h.Servers[1].SerfStatus != "failed" ||
		h.Servers[1].StorageError != "write raft log: no space left on device" || h.Servers[0].StorageError != "" {
		t.Errorf("AutopilotServerHealth while unhealthy (429): got %+v, %v; want the health, not an error", h, err)
	}
	st, err := op.AutopilotState(ctx)
	if err != nil || st.Leader != "s1" || st.Servers["s1"].Status != "leader" || st.OptimisticFailureTolerance != 1 {
		t.Errorf("AutopilotState: got %+v, %v", st, err)
	}

	body, _ := json.Marshal(conf)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 || seen[0] != "GET /v1/operator/autopilot/configuration?dc=dc2&stale= " {
		t.Errorf("agent saw %q", seen)
	}
	var sent map[string]any
	if err := json.Unmarshal(body, &sent); err != nil || sent["LastContactThreshold"] != "200ms" || sent["ServerStabilizationTime"] != "10s" {
		t.Errorf("the configuration sent: got %s, want durations as strings", body)
	}
	if want := "PUT /v1/operator/autopilot/configuration?cas=8 " + string(body); seen[2] != want {
		t.Errorf("CAS: agent saw %q, want %q", seen[2], want)
	}
}

func TestAutopilotHealthError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"error": "Permission denied: token lacks operator:read"}`)
	}))
	defer srv.Close()
	c, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var se *api.StatusError
	if _, err := c.Operator().AutopilotServerHealth(context.Background()); !errors.As(err, &se) || se.Code != http.StatusForbidden {
		t.Errorf("got %v, want a 403 StatusError", err)
	}
	srv.Close()
	var ue *api.UnreachableError
	if _, err := c.Operator().AutopilotServerHealth(context.Background()); !errors.As(err, &ue) {
		t.Errorf("agent gone: got %v, want an UnreachableError", err)
	}
}

func TestDurationJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{{`"1m30s"`, 90 * time.Second}, {`200000000`, 200 * time.Millisecond}, {`"-1ns"`, -1}} {
		var d api.Duration
		if err := json.Unmarshal([]byte(tc.in), &d); err != nil || time.Duration(d) != tc.want {
			t.Errorf("%s: got %v, %v; want %v", tc.in, d, err, tc.want)
		}
	}
	var d api.Duration
	if err := json.Unmarshal([]byte(`"soon"`), &d); err == nil {
		t.Error(`"soon": got no error`)
	}
}
