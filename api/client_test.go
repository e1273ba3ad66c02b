package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/porttest"
)

// recorded is what the fake agent saw of one request.
type recorded struct {
	Method, Path, Query, ContentType string
	Body                             []byte
}

// reply is what the fake agent answers.
type reply struct {
	Status int
	Header map[string]string
	Body   string
}

// fakeAgent starts a server answering every request with rep and returns a
// client for it and a function returning the requests it saw.
func fakeAgent(t *testing.T, rep reply) (*api.Client, func() []recorded) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []recorded
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, recorded{
			Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
			ContentType: r.Header.Get("Content-Type"), Body: body,
		})
		mu.Unlock()
		for k, v := range rep.Header {
			w.Header().Set(k, v)
		}
		if rep.Status != 0 {
			w.WriteHeader(rep.Status)
		}
		io.WriteString(w, rep.Body)
	}))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return append([]recorded(nil), got...)
	}
}

// only returns the single request seen, failing the test otherwise.
func only(t *testing.T, seen func() []recorded) recorded {
	t.Helper()
	got := seen()
	if len(got) != 1 {
		t.Fatalf("got %d requests, want 1: %+v", len(got), got)
	}
	return got[0]
}

func checkRequest(t *testing.T, got recorded, method, path, query string) {
	t.Helper()
	if got.Method != method || got.Path != path || got.Query != query {
		t.Errorf("got %s %s?%s, want %s %s?%s", got.Method, got.Path, got.Query, method, path, query)
	}
}

func TestNewClientAddress(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "http://127.0.0.1:8500"},
		{"127.0.0.1:8500", "http://127.0.0.1:8500"},
		{"localhost:18500", "http://localhost:18500"},
		{"[::1]:8500", "http://[::1]:8500"},
		{"http://10.0.0.1:8500", "http://10.0.0.1:8500"},
		{"http://10.0.0.1:8500/", "http://10.0.0.1:8500"},
		{"https://agent.example:8501", "https://agent.example:8501"},
		{"https://agent.example", "https://agent.example"},
	} {
		c, err := api.NewClient(api.Config{Address: tc.in})
		if err != nil {
			t.Errorf("NewClient(%q): %v", tc.in, err)
			continue
		}
		if got := c.Address(); got != tc.want {
			t.Errorf("NewClient(%q).Address() = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, in := range []string{
		"localhost", "127.0.0.1", ":8500", "host:", "ftp://h:21", "http://:8500",
		"http://h:8500/v1", "http://h:8500?x=1", "http://u:p@h:8500", "h:99999", "http://h:0",
	} {
		if _, err := api.NewClient(api.Config{Address: in}); err == nil {
			t.Errorf("NewClient(%q): got no error, want one", in)
		} else if !strings.Contains(err.Error(), in) {
			t.Errorf("NewClient(%q): error %q does not name the address", in, err)
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	t.Setenv("CAIRN_HTTP_ADDR", "")
	if got := api.DefaultConfig().Address; got != "127.0.0.1:8500" {
		t.Errorf("got Address %q, want 127.0.0.1:8500", got)
	}
	t.Setenv("CAIRN_HTTP_ADDR", "http://10.1.2.3:9500")
	if got := api.DefaultConfig().Address; got != "http://10.1.2.3:9500" {
		t.Errorf("with CAIRN_HTTP_ADDR set, got Address %q, want http://10.1.2.3:9500", got)
	}
}

func TestServiceRegister(t *testing.T) {
	c, seen := fakeAgent(t, reply{})
	reg := &api.AgentServiceRegistration{
		ID: "web-1", Name: "web", Tags: []string{"v1", "primary"}, Port: 8080,
		Address: "10.0.0.5", Meta: map[string]string{"version": "1.2"},
		Weights: &api.AgentWeights{Passing: 10, Warning: 1},
	}
	if err := c.Agent().ServiceRegister(context.Background(), reg); err != nil {
		t.Fatalf("ServiceRegister: %v", err)
	}
	got := only(t, seen)
	checkRequest(t, got, "PUT", "/v1/agent/service/register", "")
	if got.ContentType != "application/json" {
		t.Errorf("got Content-Type %q, want application/json", got.ContentType)
	}
	var body map[string]any
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatalf("body %s: %v", got.Body, err)
	}
	want := map[string]any{
		"ID": "web-1", "Name": "web", "Tags": []any{"v1", "primary"}, "Port": float64(8080),
		"Address": "10.0.0.5", "Meta": map[string]any{"version": "1.2"},
		"Weights": map[string]any{"Passing": float64(10), "Warning": float64(1)},
	}
	if !reflect.DeepEqual(body, want) {
		t.Errorf("got body %s, want %v", got.Body, want)
	}
}

func TestServiceRegisterOmitsEmpty(t *testing.T) {
	c, seen := fakeAgent(t, reply{})
	if err := c.Agent().ServiceRegister(context.Background(), &api.AgentServiceRegistration{Name: "web"}); err != nil {
		t.Fatalf("ServiceRegister: %v", err)
	}
	if got, want := string(only(t, seen).Body), `{"Name":"web"}`; got != want {
		t.Errorf("got body %s, want %s", got, want)
	}
	if err := c.Agent().ServiceRegister(context.Background(), nil); err == nil {
		t.Error("ServiceRegister(nil): got no error, want one")
	}
}

func TestServiceDeregisterEscapesID(t *testing.T) {
	c, seen := fakeAgent(t, reply{})
	if err := c.Agent().ServiceDeregister(context.Background(), "web/1 a?b"); err != nil {
		t.Fatalf("ServiceDeregister: %v", err)
	}
	checkRequest(t, only(t, seen), "PUT", "/v1/agent/service/deregister/web%2F1%20a%3Fb", "")
	if err := c.Agent().ServiceDeregister(context.Background(), ""); err == nil {
		t.Error("ServiceDeregister(\"\"): got no error, want one")
	}
}

func TestAgentServices(t *testing.T) {
	c, seen := fakeAgent(t, reply{Body: `{"web-1": {"ID": "web-1", "Service": "web", "Tags": ["v1"],
		"Port": 8080, "Address": "10.0.0.5", "Weights": {"Passing": 1, "Warning": 1}, "Datacenter": "dc1"}}`})
	got, err := c.Agent().Services(context.Background())
	if err != nil {
		t.Fatalf("Services: %v", err)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/agent/services", "")
	want := map[string]*api.AgentService{"web-1": {
		ID: "web-1", Service: "web", Tags: []string{"v1"}, Port: 8080, Address: "10.0.0.5",
		Weights: api.AgentWeights{Passing: 1, Warning: 1}, Datacenter: "dc1",
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got["web-1"], want["web-1"])
	}
}

func TestCatalogServices(t *testing.T) {
	c, seen := fakeAgent(t, reply{
		Header: map[string]string{"X-Consul-Index": "42"},
		Body:   `{"consul": [], "web": ["v1", "v2"]}`,
	})
	got, meta, err := c.Catalog().Services(context.Background())
	if err != nil {
		t.Fatalf("Services: %v", err)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/catalog/services", "")
	if want := map[string][]string{"consul": {}, "web": {"v1", "v2"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if meta.LastIndex != 42 {
		t.Errorf("got LastIndex %d, want 42", meta.LastIndex)
	}
}

func TestCatalogService(t *testing.T) {
	c, seen := fakeAgent(t, reply{
		Header: map[string]string{"X-Consul-Index": "7"},
		Body: `[{"ID": "n1-id", "Node": "n1", "Address": "10.0.0.1", "Datacenter": "dc1",
			"ServiceID": "web-1", "ServiceName": "web", "ServiceTags": ["v1"], "ServicePort": 80,
			"ServiceWeights": {"Passing": 3, "Warning": 1}, "CreateIndex": 5, "ModifyIndex": 6}]`,
	})
	got, meta, err := c.Catalog().Service(context.Background(), "web", "v1")
	if err != nil {
		t.Fatalf("Service: %v", err)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/catalog/service/web", "tag=v1")
	want := []*api.CatalogService{{
		ID: "n1-id", Node: "n1", Address: "10.0.0.1", Datacenter: "dc1", ServiceID: "web-1",
		ServiceName: "web", ServiceTags: []string{"v1"}, ServicePort: 80,
		ServiceWeights: api.AgentWeights{Passing: 3, Warning: 1}, CreateIndex: 5, ModifyIndex: 6,
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got[0], want[0])
	}
	if meta.LastIndex != 7 {
		t.Errorf("got LastIndex %d, want 7", meta.LastIndex)
	}
}

func TestCatalogNodes(t *testing.T) {
	c, seen := fakeAgent(t, reply{Body: `[{"ID": "a", "Node": "n1", "Address": "10.0.0.1", "Datacenter": "dc1"}]`})
	got, meta, err := c.Catalog().Nodes(context.Background())
	if err != nil {
		t.Fatalf("Nodes: %v", err)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/catalog/nodes", "")
	want := []*api.Node{{ID: "a", Node: "n1", Address: "10.0.0.1", Datacenter: "dc1"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got[0], want[0])
	}
	if meta.LastIndex != 0 {
		t.Errorf("without X-Consul-Index got LastIndex %d, want 0", meta.LastIndex)
	}
}

func TestHealthService(t *testing.T) {
	body := `[{"Node": {"Node": "n1", "Address": "10.0.0.1"},
		"Service": {"ID": "web-1", "Service": "web", "Port": 80},
		"Checks": [{"Node": "n1", "CheckID": "serfHealth", "Status": "passing"}]}]`
	for _, tc := range []struct {
		tag     string
		passing bool
		query   string
	}{
		{"", false, ""},
		{"v1", false, "tag=v1"},
		{"", true, "passing=1"},
		{"v 1", true, "passing=1&tag=v+1"},
	} {
		c, seen := fakeAgent(t, reply{Header: map[string]string{"X-Consul-Index": "9"}, Body: body})
		got, meta, err := c.Health().Service(context.Background(), "web", tc.tag, tc.passing)
		if err != nil {
			t.Fatalf("Service(tag %q, passing %v): %v", tc.tag, tc.passing, err)
		}
		checkRequest(t, only(t, seen), "GET", "/v1/health/service/web", tc.query)
		if len(got) != 1 || got[0].Node.Node != "n1" || got[0].Service.ID != "web-1" ||
			len(got[0].Checks) != 1 || got[0].Checks[0].Status != api.HealthPassing {
			t.Errorf("got %+v, want one entry of n1/web-1 with a passing check", got)
		}
		if meta.LastIndex != 9 {
			t.Errorf("got LastIndex %d, want 9", meta.LastIndex)
		}
	}
}

func TestStatusLeader(t *testing.T) {
	c, seen := fakeAgent(t, reply{Body: `"10.0.0.1:8300"`})
	got, err := c.Status().Leader(context.Background())
	if err != nil {
		t.Fatalf("Leader: %v", err)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/status/leader", "")
	if got != "10.0.0.1:8300" {
		t.Errorf("got leader %q, want 10.0.0.1:8300", got)
	}
}

func TestStatusError(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  reply
		want api.StatusError
		text string
	}{{
		name: "validation",
		rep: reply{Status: 400, Body: `{"error": "Port: must be between 0 and 65535, got 70000",
			"field": "Port", "reason": "must be between 0 and 65535, got 70000"}`},
		want: api.StatusError{Code: 400, Message: "Port: must be between 0 and 65535, got 70000",
			Field: "Port", Reason: "must be between 0 and 65535, got 70000"},
		text: "agent returned 400: Port: must be between 0 and 65535, got 70000",
	}, {
		name: "server error",
		rep:  reply{Status: 500, Body: `{"error": "no leader"}`},
		want: api.StatusError{Code: 500, Message: "no leader"},
		text: "agent returned 500: no leader",
	}, {
		name: "plain text",
		rep:  reply{Status: 404, Body: "404 page not found\n"},
		want: api.StatusError{Code: 404, Message: "404 page not found"},
		text: "agent returned 404: 404 page not found",
	}, {
		name: "empty body",
		rep:  reply{Status: 503},
		want: api.StatusError{Code: 503},
		text: "agent returned 503: Service Unavailable",
	}, {
		name: "multi-line body",
		rep:  reply{Status: 502, Body: "<html>\n<body>Bad gateway</body>\n</html>"},
		want: api.StatusError{Code: 502, Message: "<html> <body>Bad gateway</body> </html>"},
		text: "agent returned 502: <html> <body>Bad gateway</body> </html>",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := fakeAgent(t, tc.rep)
			err := c.Agent().ServiceRegister(context.Background(), &api.AgentServiceRegistration{Name: "web"})
			var se *api.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("got error %v (%T), want a *api.StatusError", err, err)
			}
			if *se != tc.want {
				t.Errorf("got %+v, want %+v", *se, tc.want)
			}
			if err.Error() != tc.text {
				t.Errorf("got text %q, want %q", err.Error(), tc.text)
			}
		})
	}
}

func TestBadIndexHeader(t *testing.T) {
	c, _ := fakeAgent(t, reply{Header: map[string]string{"X-Consul-Index": "x1"}, Body: `[]`})
	if _, _, err := c.Catalog().Nodes(context.Background()); err == nil || !strings.Contains(err.Error(), "X-Consul-Index") {
		t.Errorf("got error %v, want one naming X-Consul-Index", err)
	}
}

func TestBadJSON(t *testing.T) {
	c, _ := fakeAgent(t, reply{Body: `{"web": `})
	if _, err := c.Agent().Services(context.Background()); err == nil || !strings.Contains(err.Error(), "decode response") {
		t.Errorf("got error %v, want a decode error", err)
	}
}

func TestResponseTooLarge(t *testing.T) {
	c, _ := fakeAgent(t, reply{Body: `"` + strings.Repeat("a", 16<<20) + `"`})
	if _, err := c.Status().Leader(context.Background()); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("got error %v, want one about the response size", err)
	}
}

func TestUnreachableClosedPort(t *testing.T) {
	addr := porttest.Refused(t)
	c, err := api.NewClient(api.Config{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Agent().ServiceRegister(context.Background(), &api.AgentServiceRegistration{Name: "web"})
	var ue *api.UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("got error %v (%T), want an *api.UnreachableError", err, err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("errors.Is(err, ECONNREFUSED) = false for %v", err)
	}
	msg := err.Error()
	want := "cannot reach the cairn agent at http://" + addr + ": connection refused ("
	if !strings.HasPrefix(msg, want) {
		t.Errorf("got %q, want it to start with %q", msg, want)
	}
	if strings.ContainsAny(msg, "\n\r") {
		t.Errorf("got a message of several lines: %q", msg)
	}
	for _, noise := range []string{"dial tcp", "Put ", "connect:"} {
		if strings.Contains(msg, noise) {
			t.Errorf("message %q holds net/http's chain (%q)", msg, noise)
		}
	}
}

func TestUnreachableTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	c, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Status().Leader(ctx)
	var ue *api.UnreachableError
	if !errors.As(err, &ue) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got error %v (%T), want an *api.UnreachableError wrapping DeadlineExceeded", err, err)
	}
	if !strings.Contains(err.Error(), srv.URL+": timed out (") {
		t.Errorf("got %q, want it to say the request to %s timed out", err, srv.URL)
	}
}

func TestCanceledIsNotUnreachable(t *testing.T) {
	c, _ := fakeAgent(t, reply{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Agent().Services(ctx)
	var ue *api.UnreachableError
	if errors.As(err, &ue) || !errors.Is(err, context.Canceled) {
		t.Errorf("got error %v (%T), want context.Canceled and no UnreachableError", err, err)
	}
}
