package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// testutilJSON is a config as testutil writes it for makeACLClient.
const testutilJSON = `{"node_name":"node-1","node_id":"6a1c3b52-0f6e-4f4e-9d3c-2b1a0c9e8d7f",
"performance":{"raft_multiplier":1},"bootstrap":true,"server":true,"data_dir":"/tmp/x/data",
"segments":null,"disable_update_check":true,"log_level":"debug","bind_addr":"127.0.0.1","addresses":{},
"ports":{"dns":1001,"http":1002,"https":1003,"serf_lan":1004,"serf_wan":1005,"server":1006,"grpc":1007,"grpc_tls":1008},
"primary_datacenter":"dc1","acl":{"enabled":true,"default_policy":"deny","tokens":{"agent":"root","master":"root"}},
"connect":{"ca_config":{"cluster_id":"11111111-2222-3333-4444-555555555555"},"enabled":true},
"skip_leave_on_interrupt":true,"peering":{"enabled":true},"version":"1.22.7"}`

func TestTranslate(t *testing.T) {
	p, err := translate([]byte(testutilJSON), 2002)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(p.cairn)
	var c map[string]any
	_ = json.Unmarshal(got, &c)
	if c["bootstrap_expect"] != 1.0 || c["server"] != true || c["node_id"] != "6a1c3b52-0f6e-4f4e-9d3c-2b1a0c9e8d7f" ||
		c["server_service_name"] != "consul" {
		t.Errorf("server keys: got %s", got)
	}
	ports := c["ports"].(map[string]any)
	if ports["http"] != 2002.0 || ports["https"] != -1.0 || ports["dns"] != 1001.0 || ports["server"] != 1006.0 {
		t.Errorf("ports: got %v, want http behind the front (2002), https off without TLS files", ports)
	}
	if p.frontAddr != "127.0.0.1:1002" || !p.fakeCARoots {
		t.Errorf("front: got %q fakeCARoots=%v, want 127.0.0.1:1002 true", p.frontAddr, p.fakeCARoots)
	}
	uuid := p.tokens["root"]
	if !uuidRE.MatchString(uuid) {
		t.Fatalf("token root: mapped to %q, want a UUID", uuid)
	}
	tokens := c["acl"].(map[string]any)["tokens"].(map[string]any)
	if tokens["initial_management"] != uuid || tokens["agent"] != uuid {
		t.Errorf("acl.tokens: got %v, want root's UUID %s for both", tokens, uuid)
	}
	acl := c["acl"].(map[string]any)
	if acl["primary_datacenter"] != "dc1" || acl["tokens_secret_readable"] != true {
		t.Errorf("acl: got %v, want primary_datacenter dc1 and tokens_secret_readable (Consul shows secrets)", acl)
	}
	for _, want := range []string{"ignored ports.grpc:", "ignored peering.enabled"} {
		if !strings.Contains(strings.Join(p.notes, "\n"), want) {
			t.Errorf("notes %q: missing %q", p.notes, want)
		}
	}
}

func TestTranslateUnixSocketAndTLS(t *testing.T) {
	raw := strings.Replace(testutilJSON, `"addresses":{}`, `"addresses":{"http":"unix:///tmp/x/consul.sock"},"cert_file":"s.crt","key_file":"s.key","ca_file":"ca.crt","verify_incoming_https":true`, 1)
	p, err := translate([]byte(raw), 2002)
	if err != nil {
		t.Fatal(err)
	}
	if p.frontAddr != "/tmp/x/consul.sock" || !p.frontUnix {
		t.Errorf("front: got %q (unix %v), want the socket testutil dials", p.frontAddr, p.frontUnix)
	}
	// cairn serves its own socket, behind the front (which fakes the CA
	// roots testutil waits for).
	if got := p.cairn["addresses"].(map[string]any)["http"]; got != "unix:///tmp/x/consul.sock.cairn" {
		t.Errorf("cairn's addresses.http: got %v, want its own socket beside testutil's", got)
	}
	https := p.cairn["tls"].(map[string]any)["https"].(map[string]any)
	if https["cert_file"] != "s.crt" || https["verify_incoming"] != true {
		t.Errorf("tls.https: got %v", https)
	}
	if p.cairn["ports"].(map[string]any)["https"] != 1003 {
		t.Errorf("ports.https: got %v, want 1003", p.cairn["ports"])
	}
}

// TestFront checks that the front maps the configured token, fakes the CA
// roots once and passes everything else through as it is.
func TestFront(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.RequestURI()+" token="+r.Header.Get("X-Consul-Token"))
		mu.Unlock()
		w.Header().Set("X-Consul-Index", "7")
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "body")
	}))
	defer backend.Close()
	p := &plan{tokens: map[string]string{"root": "0e5f1a2b-0000-4000-8000-000000000001"}, fakeCARoots: true}
	f := newFront("tcp", strings.TrimPrefix(backend.URL, "http://"), p, make(chan struct{}), slog.New(slog.DiscardHandler))
	front := httptest.NewServer(f)
	defer front.Close()

	get := func(path, token string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", front.URL+path, nil)
		if token != "" {
			req.Header.Set("X-Consul-Token", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := get("/v1/agent/connect/ca/roots", ""); r.StatusCode != 200 {
		t.Errorf("first CA roots: got %d, want the fake 200", r.StatusCode)
	}
	if r := get("/v1/agent/connect/ca/roots", ""); r.StatusCode != http.StatusTeapot {
		t.Errorf("second CA roots: got %d, want cairn's answer", r.StatusCode)
	}
	r := get("/v1/kv/a%2Fb?token=root&index=3", "root")
	if r.StatusCode != http.StatusTeapot || r.Header.Get("X-Consul-Index") != "7" {
		t.Errorf("kv: got %d %v, want cairn's status and headers", r.StatusCode, r.Header)
	}
	get("/v1/kv/x", "other")
	want := []string{
		"/v1/agent/connect/ca/roots token=",
		"/v1/kv/a%2Fb?index=3&token=0e5f1a2b-0000-4000-8000-000000000001 token=0e5f1a2b-0000-4000-8000-000000000001",
		"/v1/kv/x token=other",
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("cairn saw:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// TestFrontCairnExited checks that a request held for cairn fails at once
// when cairn has exited.
func TestFrontCairnExited(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	exited := make(chan struct{})
	close(exited)
	front := httptest.NewServer(newFront("tcp", addr, &plan{}, exited, slog.New(slog.DiscardHandler)))
	defer front.Close()
	resp, err := http.Get(front.URL + "/v1/status/leader")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("got %d, want 502", resp.StatusCode)
	}
}
