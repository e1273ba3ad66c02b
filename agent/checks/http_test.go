package checks_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

// target is an HTTP server whose answer a test flips: a status code, or 0
// to hang until the client gives up. Every body carries the request's
// number, so that every run changes the output and is notified.
type target struct {
	*httptest.Server
	code    atomic.Int32
	hits    atomic.Int64
	started chan struct{} // receives when a hanging request arrives
}

func newTarget(t *testing.T, code int) *target {
	tg := &target{started: make(chan struct{}, 1)}
	tg.code.Store(int32(code))
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := tg.hits.Add(1)
		code := int(tg.code.Load())
		if code == 0 {
			select {
			case tg.started <- struct{}{}:
			default:
			}
			<-r.Context().Done()
			return
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "answer %d (%d)", code, n)
	}))
	t.Cleanup(tg.Close)
	return tg
}

func TestHTTPTransitions(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, 200)
	m, rec := newManager(t, checks.Config{}, nil)
	mustAdd(t, m, checks.Definition{ID: "web", HTTP: tg.URL + "/health", Interval: 50 * time.Millisecond})

	// Starts critical (the default), then passes.
	if st, _, _ := m.Status("web"); st != catalog.HealthCritical {
		t.Fatalf("status at start: got %s, want critical", st)
	}
	i := rec.waitFor(t, "web", 0, catalog.HealthPassing, "HTTP GET "+tg.URL+"/health: 200 OK Output: answer 200")
	tg.code.Store(500)
	i = rec.waitFor(t, "web", i, catalog.HealthCritical, "500 Internal Server Error Output: answer 500")
	tg.code.Store(429)
	i = rec.waitFor(t, "web", i, catalog.HealthWarning, "429 Too Many Requests")
	tg.code.Store(200)
	i = rec.waitFor(t, "web", i, catalog.HealthPassing, "200 OK")
	tg.code.Store(0) // hang: the Timeout ends the run
	i = rec.waitFor(t, "web", i, catalog.HealthCritical, "deadline exceeded")
	tg.code.Store(204)
	rec.waitFor(t, "web", i, catalog.HealthPassing, "204 No Content")
	// A target that is gone.
	tg.Close()
	rec.waitFor(t, "web", i, catalog.HealthCritical, "connection refused")
}

// statusesOf returns, in order, the statuses of check id's events from
// index from whose output contains sub.
func statusesOf(rec *recorder, id string, from int, sub string) []catalog.HealthStatus {
	evs, _, _, _ := rec.since(id, from)
	var out []catalog.HealthStatus
	for _, e := range evs {
		if strings.Contains(e.output, sub) {
			out = append(out, e.status)
		}
	}
	return out
}

func firstN[T any](s []T, n int) []T { return s[:min(n, len(s))] }

func TestHTTPThresholds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                 string
		warnAfter, critAfter int
		successes            int
		wantFailing          []catalog.HealthStatus // statuses of the first failed runs
		wantRecovering       []catalog.HealthStatus // then of the first good runs
	}{
		{"critical at once", 0, 0, 0,
			[]catalog.HealthStatus{"critical"}, []catalog.HealthStatus{"passing"}},
		{"critical after 3", 0, 3, 0,
			[]catalog.HealthStatus{"passing", "passing", "critical"}, []catalog.HealthStatus{"passing"}},
		{"warning after 1, critical after 3", 1, 3, 0,
			[]catalog.HealthStatus{"warning", "warning", "critical"}, []catalog.HealthStatus{"passing"}},
		{"passing after 2", 0, 0, 2,
			[]catalog.HealthStatus{"critical"}, []catalog.HealthStatus{"critical", "passing"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tg := newTarget(t, 200)
			m, rec := newManager(t, checks.Config{}, nil)
			mustAdd(t, m, checks.Definition{
				ID: "web", HTTP: tg.URL, Status: catalog.HealthPassing,
				Interval:              50 * time.Millisecond,
				FailuresBeforeWarning: tc.warnAfter, FailuresBeforeCritical: tc.critAfter, SuccessBeforePassing: tc.successes,
			})
			rec.waitFor(t, "web", 0, catalog.HealthPassing, "answer 200")

			fail := rec.mark()
			tg.code.Store(500)
			rec.waitFor(t, "web", fail, catalog.HealthCritical, "answer 500")
			got := firstN(statusesOf(rec, "web", fail, "answer 500"), len(tc.wantFailing))
			if fmt.Sprint(got) != fmt.Sprint(tc.wantFailing) {
				t.Errorf("statuses of the failed runs: got %v, want %v", got, tc.wantFailing)
			}

			good := rec.mark()
			tg.code.Store(200)
			rec.waitFor(t, "web", good, catalog.HealthPassing, "answer 200")
			got = firstN(statusesOf(rec, "web", good, "answer 200"), len(tc.wantRecovering))
			if fmt.Sprint(got) != fmt.Sprint(tc.wantRecovering) {
				t.Errorf("statuses of the good runs: got %v, want %v", got, tc.wantRecovering)
			}
		})
	}
}

func TestHTTPRequest(t *testing.T) {
	t.Parallel()
	got := make(chan *http.Request, 1)
	bodies := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case got <- r:
			bodies <- string(b)
		default:
		}
		fmt.Fprint(w, strings.Repeat("é", 100)) // 200 bytes, runes of 2
	}))
	t.Cleanup(srv.Close)
	m, rec := newManager(t, checks.Config{}, nil)
	mustAdd(t, m, checks.Definition{
		ID: "api", HTTP: srv.URL + "/ping?x=1", Method: "PUT", Body: "hello",
		Header:        map[string][]string{"x-token": {"secret"}, "Host": {"api.example"}},
		Interval:      20 * time.Millisecond,
		OutputMaxSize: 7, // cuts a rune in half: truncation backs off to 6 bytes
	})
	r := <-got
	if r.Method != "PUT" || r.URL.Path != "/ping" || r.Host != "api.example" {
		t.Errorf("request: got %s %s Host %s, want PUT /ping Host api.example", r.Method, r.URL.Path, r.Host)
	}
	if h := r.Header.Get("X-Token"); h != "secret" {
		t.Errorf("X-Token: got %q, want secret", h)
	}
	if ua := r.Header.Get("User-Agent"); ua != "cairn/health-check" {
		t.Errorf("User-Agent: got %q, want cairn/health-check", ua)
	}
	if b := <-bodies; b != "hello" {
		t.Errorf("body: got %q, want hello", b)
	}
	rec.waitFor(t, "api", 0, catalog.HealthPassing, "200 OK Output: ééé")
	_, out, _ := m.Status("api")
	if !strings.HasSuffix(out, "Output: ééé") {
		t.Errorf("output: got %q, want the body cut to 3 runes", out)
	}
}

func TestHTTPTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	m, rec := newManager(t, checks.Config{}, nil)
	def := checks.Definition{HTTP: srv.URL, Interval: 20 * time.Millisecond, Status: catalog.HealthPassing}
	def.ID = "verify"
	mustAdd(t, m, def)
	def.ID, def.TLSSkipVerify = "skip", true
	mustAdd(t, m, def)
	rec.waitFor(t, "verify", 0, catalog.HealthCritical, "certificate")
	rec.waitFor(t, "skip", 0, catalog.HealthPassing, "200 OK")
}

// A probe that hangs is cancelled by Remove, not waited out.
func TestRemoveCancelsHungProbe(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, 0)
	m, rec := newManager(t, checks.Config{}, nil)
	mustAdd(t, m, checks.Definition{ID: "slow", HTTP: tg.URL, Interval: time.Second, Timeout: time.Second})
	mustAdd(t, m, checks.Definition{ID: "other", TCP: tg.Listener.Addr().String(), Interval: 10 * time.Millisecond})
	rec.waitFor(t, "other", 0, catalog.HealthPassing, "Success") // not blocked by "slow"
	select {
	case <-tg.started:
	case <-time.After(waitTimeout):
		t.Fatal("the hanging request never arrived")
	}
	start := time.Now()
	if !m.Remove("slow") {
		t.Fatal("Remove: got false, want true")
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Remove took %s with a probe hanging; want it cancelled at once", d)
	}
	if m.Remove("slow") {
		t.Error("second Remove: got true, want false")
	}
}
