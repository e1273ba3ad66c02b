package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/waittest"
)

// startServer starts a server with cfg over l and c (empty fakes when nil)
// on a free loopback port, shut down when the test ends.
func startServer(t *testing.T, cfg httpapi.Config, l httpapi.Local, c any) *httpapi.Server {
	t.Helper()
	if c == nil {
		c = &fakeCatalog{}
	}
	s := newAPI(t, cfg, httpapi.Deps{Local: l, Door: fakeDoor{backends: []any{c, fakeStatus("10.0.0.1:8300")}}})
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

// dialFrom opens a TCP connection to s from the loopback address from
// (127.0.0.1, 127.0.0.2, ...: all of 127/8 is the loopback), closed when
// the test ends.
func dialFrom(t *testing.T, from string, s *httpapi.Server) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: waitTimeout}
	c, err := d.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(waitTimeout)); err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTrip sends a GET of target on c, a raw connection, and returns the
// response's status code, or an error when none came.
func roundTrip(c net.Conn, br *bufio.Reader, target string) (int, error) {
	if _, err := io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}

// send makes a request to s with the given Host (the dialled address when
// "") and headers, and returns its status and body.
func send(t *testing.T, s *httpapi.Server, method, target, host, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.Addr().String()+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: waitTimeout}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s (Host %q): %v", method, target, host, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, target, err)
	}
	return resp.StatusCode, string(b)
}

// errorField returns the "field" of a JSON error body.
func errorField(t *testing.T, body string) string {
	t.Helper()
	var e struct{ Error, Field string }
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" {
		t.Fatalf("body %q is not a JSON error: %v", body, err)
	}
	return e.Field
}

// TestHostHeader: a request naming a host the agent does not answer to
// (a page re-pointed at it by DNS rebinding) is refused naming Host; IP
// addresses, localhost, the node name and the allowed hosts pass.
func TestHostHeader(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.NodeName = "node1"
	cfg.AllowedHosts = []string{"Cairn.Internal"}
	s := startServer(t, cfg, nil, nil)
	port := s.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{s.Addr().String(), true},
		{"127.0.0.1", true},
		{"[::1]:8500", true},
		{"[::1]", true},
		{"10.1.2.3:80", true},
		{"127.0.0.1.:8500", true},
		{"localhost:8500", true},
		{"LOCALHOST", true},
		{"localhost.", true},
		{"ui.localhost:8500", true},
		{"node1", true},
		{"Node1.:8500", true},
		{"cairn.internal:8500", true},
		{"evil.example", false},
		{"evil.example:" + strconv.Itoa(port), false},
		{"localhost.evil.example", false},
		{"127.0.0.1.nip.io", false},
		{"node1.evil.example", false},
		{"xlocalhost", false},
	} {
		code, body := send(t, s, http.MethodGet, "/v1/status/leader", tc.host, "", nil)
		switch {
		case tc.ok && code != http.StatusOK:
			t.Errorf("Host %q: got %d %s, want 200", tc.host, code, body)
		case !tc.ok && code != http.StatusForbidden:
			t.Errorf("Host %q: got %d %s, want 403", tc.host, code, body)
		case !tc.ok:
			if f := errorField(t, body); f != "Host" || !strings.Contains(body, "Host") {
				t.Errorf("Host %q: got body %s, want it to name the Host header", tc.host, body)
			}
		}
	}

	// "*" lets any name through.
	cfg.AllowedHosts = []string{"*"}
	open := startServer(t, cfg, nil, nil)
	if code, body := send(t, open, http.MethodGet, "/v1/status/leader", "evil.example", "", nil); code != http.StatusOK {
		t.Errorf("AllowedHosts [*]: got %d %s, want 200", code, body)
	}
}

// queryCatalog is a fakeCatalog that also keeps prepared queries
// (through fakeDoor), recording every change asked of it.
type queryCatalog struct {
	*fakeCatalog
	mu      sync.Mutex
	applied []catalog.QueryOp
}

var _ queryBackend = (*queryCatalog)(nil)

func (q *queryCatalog) ApplyQuery(_ context.Context, op catalog.QueryOp, _ *catalog.PreparedQuery) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.applied = append(q.applied, op)
	return "8f246b77-f3e1-ff88-5b48-8ec93abf3e05", nil
}

func (q *queryCatalog) Queries(context.Context, string) (uint64, []*catalog.PreparedQuery, error) {
	return 1, nil, nil
}

func (q *queryCatalog) ExecuteQuery(context.Context, string, string) (*catalog.QueryResult, error) {
	return nil, catalog.ErrNotFound
}

func (q *queryCatalog) changes() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.applied)
}

// TestCrossOriginWrite: a write a page on another origin makes the
// browser send (a text/plain POST needs no preflight) is refused and
// changes nothing; reads, same-origin writes and clients that are not
// browsers (no Sec-Fetch-Site, no Origin) pass.
func TestCrossOriginWrite(t *testing.T) {
	t.Parallel()
	l := &fakeLocal{}
	cat := &queryCatalog{fakeCatalog: &fakeCatalog{}}
	s := startServer(t, testConfig(), l, cat)
	const query = `{"Name":"web","Service":{"Service":"web"}}`
	crossSite := map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
	oldBrowser := map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}

	for _, tc := range []struct {
		name, method, target, body string
		header                     map[string]string
		field                      string
	}{
		{"POST /v1/query cross-site", http.MethodPost, "/v1/query", query, crossSite, "Sec-Fetch-Site"},
		{"POST /v1/query from another Origin", http.MethodPost, "/v1/query", query, oldBrowser, "Origin"},
		{"PUT register cross-site", http.MethodPut, "/v1/agent/service/register", `{"Name":"web"}`, crossSite, "Sec-Fetch-Site"},
		{"DELETE query same-site", http.MethodDelete, "/v1/query/8f246b77-f3e1-ff88-5b48-8ec93abf3e05", "",
			map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://other.localhost:8500"}, "Sec-Fetch-Site"},
	} {
		code, body := send(t, s, tc.method, tc.target, "", tc.body, tc.header)
		if code != http.StatusForbidden {
			t.Errorf("%s: got %d %s, want 403", tc.name, code, body)
			continue
		}
		if f := errorField(t, body); f != tc.field {
			t.Errorf("%s: got field %q (%s), want %q", tc.name, f, body, tc.field)
		}
	}
	if n := cat.changes(); n != 0 {
		t.Errorf("cross-origin writes: the catalog got %d query changes, want none", n)
	}
	if len(l.added) != 0 {
		t.Errorf("cross-origin writes: the agent got services %v, want none", l.added)
	}

	// A read from anywhere, a same-origin write, and curl's write pass.
	if code, body := send(t, s, http.MethodGet, "/v1/query", "", "", crossSite); code != http.StatusOK {
		t.Errorf("cross-site GET: got %d %s, want 200", code, body)
	}
	sameOrigin := map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://" + s.Addr().String()}
	if code, body := send(t, s, http.MethodPost, "/v1/query", "", query, sameOrigin); code != http.StatusOK {
		t.Errorf("same-origin POST: got %d %s, want 200", code, body)
	}
	if code, body := send(t, s, http.MethodPost, "/v1/query", "", query, map[string]string{"User-Agent": "curl/8.5.0"}); code != http.StatusOK {
		t.Errorf("POST without Origin: got %d %s, want 200", code, body)
	}
	if n := cat.changes(); n != 2 {
		t.Errorf("got %d query changes, want the 2 allowed ones", n)
	}
}

// TestSlowBodyIsCut: a client that sends its headers and then not the
// body it announced is cut off after ReadTimeout, not held.
func TestSlowBodyIsCut(t *testing.T) {
	t.Parallel()
	const readTimeout = 300 * time.Millisecond
	cfg := testConfig()
	cfg.ReadTimeout = readTimeout
	l := &fakeLocal{}
	s := startServer(t, cfg, l, nil)
	c := dialFrom(t, "127.0.0.1", s)
	start := time.Now()
	if _, err := io.WriteString(c, "PUT /v1/agent/service/register HTTP/1.1\r\nHost: 127.0.0.1\r\n"+
		"Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"Name\":"); err != nil {
		t.Fatal(err)
	}
	var closedAfter atomic.Int64 // nanoseconds from start; 0 while open
	var got []byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		got, _ = io.ReadAll(c) // until the server closes (or the test's deadline)
		closedAfter.Store(int64(time.Since(start)))
	}()
	t.Cleanup(func() { c.Close(); <-done })
	waittest.For(t, readTimeout+2*time.Second, "the server to close a connection whose body never comes", func() error {
		if closedAfter.Load() == 0 {
			return errors.New("still open")
		}
		return nil
	})
	<-done
	if held := time.Duration(closedAfter.Load()); held < readTimeout*9/10 {
		t.Errorf("connection closed after %s, before the read timeout of %s", held, readTimeout)
	}
	if !strings.HasPrefix(string(got), "HTTP/1.1 400 ") {
		t.Errorf("got %q, want a 400 before the close", got)
	}
	if len(l.added) != 0 {
		t.Errorf("got services %v from a body that never came, want none", l.added)
	}
}

// blockingCatalog is a fakeCatalog whose Nodes is a blocking query that
// always waits its whole ?wait (the data never changes).
type blockingCatalog struct {
	*fakeCatalog
	cancelled atomic.Bool // a Nodes call saw its context end
}

func (b *blockingCatalog) Nodes(ctx context.Context, opts queryOpts) ([]*catalog.Node, queryMeta, error) {
	timer := time.NewTimer(opts.MaxWait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return b.fakeCatalog.Nodes(ctx, opts)
	case <-ctx.Done():
		b.cancelled.Store(true)
		return nil, queryMeta{}, ctx.Err()
	}
}

// TestReadTimeoutSparesBlockingQueries: ReadTimeout bounds reading the
// request, not answering it: a blocking query that waits several times
// longer still gets its answer.
func TestReadTimeoutSparesBlockingQueries(t *testing.T) {
	t.Parallel()
	const readTimeout, wait = 200 * time.Millisecond, time.Second
	cfg := testConfig()
	cfg.ReadTimeout = readTimeout
	cat := &blockingCatalog{fakeCatalog: &fakeCatalog{index: 9, nodes: []*catalog.Node{{Node: "n1", Address: "10.0.0.1"}}}}
	s := startServer(t, cfg, nil, cat)
	start := time.Now()
	code, body := send(t, s, http.MethodGet, "/v1/catalog/nodes?index=9&wait="+wait.String(), "", "", nil)
	took := time.Since(start)
	if code != http.StatusOK || !strings.Contains(body, `"n1"`) {
		t.Fatalf("blocking query: got %d %s, want 200 with n1", code, body)
	}
	if took < wait || cat.cancelled.Load() {
		t.Errorf("blocking query answered after %s (cancelled %v), want after its wait of %s", took, cat.cancelled.Load(), wait)
	}
}

// TestConnsPerClient: the connection one over MaxConnsPerClient from an
// address gets a 429 and is closed, while another address still gets in;
// once one of its connections closes, the address gets in again.
func TestConnsPerClient(t *testing.T) {
	t.Parallel()
	const limit = 3
	cfg := testConfig()
	cfg.MaxConnsPerClient = limit
	s := startServer(t, cfg, nil, nil)
	var held []net.Conn
	for i := range limit {
		c := dialFrom(t, "127.0.0.1", s)
		if code, err := roundTrip(c, bufio.NewReader(c), "/v1/status/leader"); err != nil || code != http.StatusOK {
			t.Fatalf("connection %d of %d: got %d, %v; want 200", i+1, limit, code, err)
		}
		held = append(held, c)
	}

	over := dialFrom(t, "127.0.0.1", s)
	resp, err := http.ReadResponse(bufio.NewReader(over), nil)
	if err != nil {
		t.Fatalf("connection %d: got %v, want a 429", limit+1, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !resp.Close {
		t.Errorf("connection %d: got %d (close %v) %s, want 429 and close", limit+1, resp.StatusCode, resp.Close, body)
	}
	if _, err := over.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("connection %d after the 429: got %v, want EOF", limit+1, err)
	}

	other := dialFrom(t, "127.0.0.2", s)
	if code, err := roundTrip(other, bufio.NewReader(other), "/v1/status/leader"); err != nil || code != http.StatusOK {
		t.Errorf("from 127.0.0.2: got %d, %v; want 200", code, err)
	}

	held[0].Close()
	waittest.For(t, waitTimeout, "127.0.0.1 to get in again after closing a connection", func() error {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, Timeout: waitTimeout}
		c, err := d.Dial("tcp", s.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(waitTimeout))
		code, err := roundTrip(c, bufio.NewReader(c), "/v1/status/leader")
		if err == nil && code != http.StatusOK {
			err = errors.New("status " + http.StatusText(code))
		}
		return err
	})
}

// TestMaxConns: the connection one over MaxConns in all gets a 503,
// whatever its address.
func TestMaxConns(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxConns = 2
	s := startServer(t, cfg, nil, nil)
	for _, from := range []string{"127.0.0.1", "127.0.0.2"} {
		c := dialFrom(t, from, s)
		if code, err := roundTrip(c, bufio.NewReader(c), "/v1/status/leader"); err != nil || code != http.StatusOK {
			t.Fatalf("from %s: got %d, %v; want 200", from, code, err)
		}
	}
	c := dialFrom(t, "127.0.0.3", s)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("third connection: got %v, want a 503", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("third connection: got %d, want 503", resp.StatusCode)
	}
}

func TestConfigValidateProtections(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*httpapi.Config)
		want   string // a substring of the error; "" for valid
	}{
		{"defaults", func(*httpapi.Config) {}, ""},
		{"no caps", func(c *httpapi.Config) { c.MaxConnsPerClient, c.MaxConns = 0, 0 }, ""},
		{"hosts", func(c *httpapi.Config) { c.AllowedHosts = []string{"*", "cairn.internal", "10.0.0.1", "::1", "Node1."} }, ""},
		{"no read timeout", func(c *httpapi.Config) { c.ReadTimeout = 0 }, "ReadTimeout"},
		{"negative per-client cap", func(c *httpapi.Config) { c.MaxConnsPerClient = -1 }, "MaxConnsPerClient"},
		{"negative cap", func(c *httpapi.Config) { c.MaxConns = -1 }, "MaxConns"},
		{"empty host", func(c *httpapi.Config) { c.AllowedHosts = []string{"a", ""} }, "AllowedHosts[1]"},
		{"host with a port", func(c *httpapi.Config) { c.AllowedHosts = []string{"cairn.internal:8500"} }, "AllowedHosts[0]"},
		{"URL", func(c *httpapi.Config) { c.AllowedHosts = []string{"http://cairn.internal"} }, "AllowedHosts[0]"},
	} {
		cfg := httpapi.DefaultConfig()
		tc.change(&cfg)
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: got %v, want valid", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
}
