package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
)

// sessionCatalog is a kvCatalog with sessions, in the same store; it
// fills in a create's ID as the servers do.
type sessionCatalog struct {
	*kvCatalog
	created []*catalog.Session
}

var _ sessionBackend = (*sessionCatalog)(nil)

func newSessionCatalog(t *testing.T) *sessionCatalog {
	t.Helper()
	c := &sessionCatalog{kvCatalog: newKVCatalog(t)}
	err := c.store.Register(1, &catalog.RegisterRequest{Node: "node1", Address: "10.0.0.1",
		Checks: []*catalog.Check{{CheckID: "serfHealth", Name: "serf", Status: catalog.HealthPassing}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *sessionCatalog) SessionCreate(_ context.Context, _ string, s *catalog.Session) (string, error) {
	c.kvMu.Lock()
	defer c.kvMu.Unlock()
	seen := *s
	c.created = append(c.created, &seen)
	cp := *s
	c.idx++
	cp.ID = "00000000-0000-4000-8000-0000000000" + string(rune('0'+c.idx/10%10)) + string(rune('0'+c.idx%10))
	if err := catalog.ValidateSession(&cp); err != nil {
		return "", err
	}
	return cp.ID, c.store.ApplySession(c.idx, time.Now(), &catalog.SessionRequest{Op: catalog.SessionCreate, Session: cp})
}

func (c *sessionCatalog) SessionDestroy(_ context.Context, _, id string) error {
	c.kvMu.Lock()
	defer c.kvMu.Unlock()
	c.idx++
	return c.store.ApplySession(c.idx, time.Now(), &catalog.SessionRequest{Op: catalog.SessionDestroy, Session: catalog.Session{ID: id}})
}

func (c *sessionCatalog) SessionRenew(_ context.Context, _, id string) (*catalog.Session, error) {
	_, s, err := c.store.SessionGet(nil, id)
	return s, err
}

func (c *sessionCatalog) SessionInfo(_ context.Context, _ queryOpts, id string) (*catalog.Session, queryMeta, error) {
	idx, s, err := c.store.SessionGet(nil, id)
	return s, queryMeta{Index: idx, KnownLeader: true}, err
}

func (c *sessionCatalog) SessionList(_ context.Context, _ queryOpts, node string) ([]*catalog.Session, queryMeta, error) {
	idx, all, err := c.store.SessionList(nil, node)
	return all, queryMeta{Index: idx, KnownLeader: true}, err
}

// newSessionServer returns the handler of a server over c, on node node1.
func newSessionServer(t *testing.T, c any) http.Handler {
	t.Helper()
	cfg := testConfig()
	cfg.NodeName = "node1"
	s := newAPI(t, cfg, httpapi.Deps{Door: fakeDoor{backends: []any{c, fakeStatus("10.0.0.1:8300")}}})
	return s.Handler()
}

type sessionOut struct {
	ID, Name, Node, Behavior, TTL string
	LockDelay                     time.Duration
	Checks, NodeChecks            []string
	CreateIndex                   uint64
}

func decodeSessions(t *testing.T, rec *httptest.ResponseRecorder) []sessionOut {
	t.Helper()
	var out []sessionOut
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("decode %s: %v", rec.Body, err)
	}
	return out
}

func createSession(t *testing.T, h http.Handler, body string) string {
	t.Helper()
	rec := serve(h, http.MethodPut, "/v1/session/create", body)
	wantStatus(t, rec, http.StatusOK)
	var out struct{ ID string }
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.ID == "" {
		t.Fatalf("create %s: got %s, %v", body, rec.Body, err)
	}
	return out.ID
}

// TestSessionCreateBodies: Consul's body shapes, its defaults, and 400s
// naming the field.
func TestSessionCreateBodies(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       catalog.Session // what reaches the servers
		field      string          // for a 400
	}{
		{"empty", "", catalog.Session{Node: "node1", NodeChecks: []string{"serfHealth"}, LockDelay: 15 * time.Second, Behavior: "release"}, ""},
		{"empty object", "{}", catalog.Session{Node: "node1", NodeChecks: []string{"serfHealth"}, LockDelay: 15 * time.Second, Behavior: "release"}, ""},
		{"api client's lock delay", `{"LockDelay":"1500ms"}`, catalog.Session{Node: "node1", NodeChecks: []string{"serfHealth"}, LockDelay: 1500 * time.Millisecond, Behavior: "release"}, ""},
		{"small number is seconds", `{"LockDelay":10}`, catalog.Session{Node: "node1", NodeChecks: []string{"serfHealth"}, LockDelay: 10 * time.Second, Behavior: "release"}, ""},
		{"large number is nanoseconds", `{"LockDelay":2000000000}`, catalog.Session{Node: "node1", NodeChecks: []string{"serfHealth"}, LockDelay: 2 * time.Second, Behavior: "release"}, ""},
		{"no checks", `{"NodeChecks":[],"Behavior":"delete","TTL":"10s","Name":"x"}`,
			catalog.Session{Name: "x", Node: "node1", NodeChecks: []string{}, LockDelay: 15 * time.Second, Behavior: "delete", TTL: "10s"}, ""},
		{"old Checks", `{"Checks":["serfHealth"]}`, catalog.Session{Node: "node1", NodeChecks: []string{"serfHealth"}, LockDelay: 15 * time.Second, Behavior: "release"}, ""},
		{"bad behavior", `{"Behavior":"keep"}`, catalog.Session{}, "Behavior"},
		{"short TTL", `{"TTL":"5s"}`, catalog.Session{}, "TTL"},
		{"no such node", `{"Node":"nope"}`, catalog.Session{}, "Node"},
		{"bad lock delay", `{"LockDelay":"soon"}`, catalog.Session{}, "LockDelay"},
		{"unknown field", `{"Nodes":"x"}`, catalog.Session{}, "Nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newSessionCatalog(t)
			h := newSessionServer(t, c)
			rec := serve(h, http.MethodPut, "/v1/session/create", tc.body)
			if tc.field != "" {
				wantStatus(t, rec, http.StatusBadRequest)
				if body := errorBody(t, rec); body["field"] != tc.field {
					t.Errorf("got field %v, want %s", body["field"], tc.field)
				}
				return
			}
			wantStatus(t, rec, http.StatusOK)
			if len(c.created) != 1 {
				t.Fatalf("got %d creates, want 1", len(c.created))
			}
			got := *c.created[0]
			if got.Name != tc.want.Name || got.Node != tc.want.Node || got.LockDelay != tc.want.LockDelay ||
				got.Behavior != tc.want.Behavior || got.TTL != tc.want.TTL ||
				(got.NodeChecks == nil) != (tc.want.NodeChecks == nil) || strings.Join(got.NodeChecks, ",") != strings.Join(tc.want.NodeChecks, ",") {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSessionLocks walks sessions and locks through the HTTP API: info,
// list, node, acquire (true, then false for another session), GET showing
// Session and LockIndex, release, destroy (releasing), renew of a gone
// session (404).
func TestSessionLocks(t *testing.T) {
	c := newSessionCatalog(t)
	h := newSessionServer(t, c)
	a := createSession(t, h, `{"Name":"a","LockDelay":"0s"}`)
	b := createSession(t, h, `{"Name":"b"}`)

	rec := serve(h, http.MethodGet, "/v1/session/info/"+a, "")
	wantStatus(t, rec, http.StatusOK)
	info := decodeSessions(t, rec)
	if len(info) != 1 || info[0].ID != a || info[0].Name != "a" || info[0].Node != "node1" || info[0].LockDelay != 0 ||
		strings.Join(info[0].NodeChecks, ",") != "serfHealth" {
		t.Errorf("info: got %+v", info)
	}
	if rec.Header().Get("X-Consul-Index") == "" {
		t.Error("info: no X-Consul-Index")
	}
	rec = serve(h, http.MethodGet, "/v1/session/info/nosuch", "")
	wantStatus(t, rec, http.StatusOK)
	wantBody(t, rec, "[]")
	for _, path := range []string{"/v1/session/list", "/v1/session/node/node1"} {
		rec = serve(h, http.MethodGet, path, "")
		wantStatus(t, rec, http.StatusOK)
		if got := decodeSessions(t, rec); len(got) != 2 {
			t.Errorf("%s: got %d sessions, want 2", path, len(got))
		}
	}
	rec = serve(h, http.MethodGet, "/v1/session/node/other", "")
	wantBody(t, rec, "[]")

	for _, step := range []struct {
		target, body, want string
	}{
		{"/v1/kv/lock?acquire=" + a, "held by a", "true"},
		{"/v1/kv/lock?acquire=" + b, "b", "false"},
		{"/v1/kv/lock?acquire=" + a, "again", "true"},
		{"/v1/kv/lock?release=" + b, "b", "false"},
	} {
		rec = serve(h, http.MethodPut, step.target, step.body)
		wantStatus(t, rec, http.StatusOK)
		wantBody(t, rec, step.want)
	}
	rec = serve(h, http.MethodGet, "/v1/kv/lock", "")
	if !strings.Contains(rec.Body.String(), `"Session":"`+a+`"`) || !strings.Contains(rec.Body.String(), `"LockIndex":1`) {
		t.Errorf("GET a held key: got %s, want Session %s and LockIndex 1", rec.Body, a)
	}
	rec = serve(h, http.MethodPut, "/v1/kv/lock?release="+a, "free")
	wantBody(t, rec, "true")
	rec = serve(h, http.MethodPut, "/v1/kv/lock?acquire="+b, "b")
	wantBody(t, rec, "true")

	rec = serve(h, http.MethodPut, "/v1/session/destroy/"+b, "")
	wantStatus(t, rec, http.StatusOK)
	wantBody(t, rec, "true")
	rec = serve(h, http.MethodGet, "/v1/kv/lock", "")
	if strings.Contains(rec.Body.String(), `"Session"`) || !strings.Contains(rec.Body.String(), `"LockIndex":2`) {
		t.Errorf("GET after the holder's destroy: got %s, want no Session, LockIndex 2", rec.Body)
	}
	rec = serve(h, http.MethodPut, "/v1/session/renew/"+a, "")
	wantStatus(t, rec, http.StatusOK)
	if got := decodeSessions(t, rec); len(got) != 1 || got[0].ID != a {
		t.Errorf("renew: got %+v", got)
	}
	wantStatus(t, serve(h, http.MethodPut, "/v1/session/renew/"+b, ""), http.StatusNotFound)
}
