package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cairndns/cairn/internal/buildinfo"
	"github.com/cairndns/cairn/internal/porttest"
)

// runCLI runs the CLI with args and returns its output and exit code.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"cairn"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

// wantError checks that the CLI failed (exit code 1) with exactly one
// "Error: " line on stderr containing every part of want.
func wantError(t *testing.T, stderr string, code int, want ...string) {
	t.Helper()
	wantExit(t, stderr, code, exitError, want...)
}

// wantUsage checks that the CLI refused its arguments (exit code 2) with
// exactly one "Error: " line on stderr containing every part of want.
func wantUsage(t *testing.T, stderr string, code int, want ...string) {
	t.Helper()
	wantExit(t, stderr, code, exitUsage, want...)
}

func wantExit(t *testing.T, stderr string, code, wantCode int, want ...string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("got exit code %d, want %d (stderr %q)", code, wantCode, stderr)
	}
	if !strings.HasPrefix(stderr, "Error: ") || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("got stderr %q, want one line starting with \"Error: \"", stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("got stderr %q, want it to contain %q", stderr, w)
		}
	}
}

// seenRequest is what the fake agent saw of one request.
type seenRequest struct {
	Method, Path string
	Query        string // raw, as sent
	Body         []byte
}

// fakeAgent serves canned answers by "METHOD /path" (404 for others) and
// records the requests it sees.
type fakeAgent struct {
	URL     string
	mu      sync.Mutex
	seen    []seenRequest
	answers map[string]answer
}

type answer struct {
	status int
	body   string
}

func newFakeAgent(t *testing.T, answers map[string]answer) *fakeAgent {
	t.Helper()
	f := &fakeAgent{answers: answers}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.seen = append(f.seen, seenRequest{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Body: body})
		f.mu.Unlock()
		a, ok := f.answers[r.Method+" "+r.URL.EscapedPath()]
		if !ok {
			a = answer{status: 404, body: `{"error": "no such endpoint"}`}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Consul-Index", "3")
		if a.status != 0 {
			w.WriteHeader(a.status)
		}
		io.WriteString(w, a.body)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// reset forgets the requests seen so far.
func (f *fakeAgent) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = nil
}

func (f *fakeAgent) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// only returns the one request the agent saw, checking its method and path.
func (f *fakeAgent) only(t *testing.T, method, path string) seenRequest {
	t.Helper()
	got := f.requests()
	if len(got) != 1 {
		t.Fatalf("agent saw %d requests, want 1: %+v", len(got), got)
	}
	if got[0].Method != method || got[0].Path != path {
		t.Errorf("agent saw %s %s, want %s %s", got[0].Method, got[0].Path, method, path)
	}
	return got[0]
}

// bodyMap decodes a JSON body for comparison.
func bodyMap(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	return m
}

func TestUnreachableAgentIsOneLine(t *testing.T) {
	addr := porttest.Refused(t)
	for _, args := range [][]string{
		{"services", "register", "-http-addr", addr, "-name", "web"},
		{"services", "deregister", "-http-addr", addr, "-id", "web"},
		{"services", "list", "-http-addr", addr},
		{"catalog", "services", "-http-addr", addr},
		{"catalog", "nodes", "-http-addr", addr},
		{"members", "-http-addr", addr},
		{"join", "-http-addr", addr, "10.0.0.2", "10.0.0.3"},
		{"leave", "-http-addr", addr},
		{"operator", "raft", "list-peers", "-http-addr", addr},
		{"checks", "list", "-http-addr", addr},
		{"checks", "pass", "-http-addr", addr, "service:web"},
		{"maint", "-http-addr", addr, "-enable"},
		{"health", "-http-addr", addr, "web"},
		{"catalog", "datacenters", "-http-addr", addr},
		{"snapshot", "save", "-http-addr", addr, filepath.Join(t.TempDir(), "x.snap")},
		{"watch", "-http-addr", addr, "-type", "nodes"},
	} {
		stdout, stderr, code := runCLI(t, args...)
		want := "Error: cannot reach the cairn agent at http://" + addr + ": connection refused ("
		wantError(t, stderr, code, want, "CAIRN_HTTP_ADDR")
		if !strings.HasPrefix(stderr, want) {
			t.Errorf("%v: got stderr %q, want it to start with %q", args, stderr, want)
		}
		if stdout != "" {
			t.Errorf("%v: got stdout %q, want none", args, stdout)
		}
	}
}

func TestHTTPAddrFromEnv(t *testing.T) {
	agent := newFakeAgent(t, map[string]answer{"GET /v1/agent/services": {body: `{}`}})
	t.Setenv("CAIRN_HTTP_ADDR", agent.URL)
	if _, stderr, code := runCLI(t, "services", "list"); code != 0 {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	agent.only(t, "GET", "/v1/agent/services")
}

func TestBadHTTPAddr(t *testing.T) {
	_, stderr, code := runCLI(t, "services", "list", "-http-addr", "ftp://x:1")
	wantError(t, stderr, code, "-http-addr", "ftp://x:1")
}

func TestVersion(t *testing.T) {
	stdout, stderr, code := runCLI(t, "version")
	if code != 0 || stderr != "" {
		t.Fatalf("got exit code %d, stderr %q", code, stderr)
	}
	re := regexp.MustCompile(`^cairn \S+\nRevision \S+\nBuild Date \S+\nProtocol [0-9]+ spoken, understands [0-9]+ to [0-9]+\nGo go[0-9.]+\S*\n$`)
	if !re.MatchString(stdout) {
		t.Errorf("got %q, want %s", stdout, re)
	}
	if !strings.HasPrefix(stdout, "cairn "+buildinfo.Version()+"\n") {
		t.Errorf("got %q, want it to start with the version %q", stdout, buildinfo.Version())
	}
	stdout, stderr, code = runCLI(t, "version", "-format", "json")
	if code != 0 || stderr != "" {
		t.Fatalf("-format json: got exit code %d, stderr %q", code, stderr)
	}
	var got versionInfo
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("-format json: %v in %q", err, stdout)
	}
	if got.Version != buildinfo.Version() || got.Revision != buildinfo.Revision() || got.Protocol != buildinfo.Protocol ||
		got.ProtocolMin != buildinfo.ProtocolMin || got.ProtocolMax != buildinfo.ProtocolMax || got.GoVersion == "" {
		t.Errorf("-format json: got %+v", got)
	}
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, args := range [][]string{
		{"-h"}, {"agent", "-h"}, {"services", "-h"}, {"services", "register", "-h"},
		{"services", "deregister", "-h"}, {"services", "list", "-h"}, {"catalog", "-h"},
		{"catalog", "services", "-h"}, {"catalog", "nodes", "-h"}, {"catalog", "datacenters", "-h"}, {"version", "-h"},
		{"members", "-h"}, {"join", "-h"}, {"leave", "-h"}, {"operator", "-h"}, {"operator", "raft", "-h"},
		{"operator", "raft", "list-peers", "-h"}, {"checks", "-h"}, {"checks", "list", "-h"},
		{"checks", "pass", "-h"}, {"checks", "warn", "-h"}, {"checks", "fail", "-h"}, {"maint", "-h"},
		{"health", "-h"}, {"snapshot", "-h"}, {"snapshot", "save", "-h"}, {"snapshot", "restore", "-h"},
		{"snapshot", "inspect", "-h"}, {"watch", "-h"},
	} {
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 || stderr != "" {
			t.Errorf("%v: got exit code %d, stderr %q", args, code, stderr)
		}
		name := "cairn " + strings.Join(args[:len(args)-1], " ")
		if !strings.Contains(stdout, "USAGE:") || !strings.Contains(stdout, strings.TrimSpace(name)) {
			t.Errorf("%v: got help %q, want USAGE naming %q", args, stdout, name)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"nope"}, []string{`unknown command "cairn nope"`, `"cairn -h"`}},
		{[]string{"services", "nope"}, []string{`unknown command "cairn services nope"`}},
		{[]string{"services", "list", "-bogus"}, []string{"-bogus", `"cairn services list -h"`}},
		{[]string{"services", "register", "-port", "http"}, []string{"-port", `"cairn services register -h"`}},
		{[]string{"services", "list", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"agent", "-dev", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"version", "extra"}, []string{"no arguments"}},
		{[]string{"join"}, []string{"missing ADDRESS", `"cairn join -h"`}},
		{[]string{"members", "-bogus"}, []string{"-bogus", `"cairn members -h"`}},
		{[]string{"catalog", "datacenters", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"operator", "nope"}, []string{`unknown command "cairn operator nope"`}},
		{[]string{"operator", "raft", "nope"}, []string{`unknown command "cairn operator raft nope"`}},
		{[]string{"operator", "raft", "list-peers", "-bogus"}, []string{"-bogus", `"cairn operator raft list-peers -h"`}},
		{[]string{"checks", "nope"}, []string{`unknown command "cairn checks nope"`}},
		{[]string{"checks", "list", "-bogus"}, []string{"-bogus", `"cairn checks list -h"`}},
		{[]string{"checks", "pass", "-bogus", "x"}, []string{"-bogus", `"cairn checks pass -h"`}},
		{[]string{"maint", "-bogus"}, []string{"-bogus", `"cairn maint -h"`}},
		{[]string{"health", "-bogus"}, []string{"-bogus", `"cairn health -h"`}},
	} {
		stdout, stderr, code := runCLI(t, tc.args...)
		wantUsage(t, stderr, code, tc.want...)
		if stdout != "" {
			t.Errorf("%v: got stdout %q, want none", tc.args, stdout)
		}
	}
}
