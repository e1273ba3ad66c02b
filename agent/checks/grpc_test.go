package checks_test

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

// Answers of grpcHealth besides a serving status.
const (
	answerNotFound = -1 // grpc-status 5 in a trailers-only response
	answerHang     = -2 // no answer until the client gives up
	answerHTTP404  = -3 // not a gRPC server at all
)

// grpcHealth is a grpc.health.v1.Health/Check server written against the
// gRPC-over-HTTP/2 spec, byte by byte, independently of the check's code.
type grpcHealth struct {
	answer  atomic.Int32 // a ServingStatus, or one of the answer* values
	lastReq atomic.Value // []byte: the last request body
	bad     atomic.Value // string: the last protocol violation seen
}

func (g *grpcHealth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.lastReq.Store(body)
	switch {
	case r.ProtoMajor != 2:
		g.bad.Store("protocol " + r.Proto)
	case r.Method != "POST" || r.URL.Path != "/grpc.health.v1.Health/Check":
		g.bad.Store(r.Method + " " + r.URL.Path)
	case r.Header.Get("Content-Type") != "application/grpc":
		g.bad.Store("content-type " + r.Header.Get("Content-Type"))
	case r.Header.Get("Te") != "trailers":
		g.bad.Store("te " + r.Header.Get("Te"))
	case !regexp.MustCompile(`^[0-9]{1,8}[HMSmun]$`).MatchString(r.Header.Get("Grpc-Timeout")):
		g.bad.Store("grpc-timeout " + r.Header.Get("Grpc-Timeout"))
	}
	switch a := g.answer.Load(); a {
	case answerHang:
		<-r.Context().Done()
	case answerHTTP404:
		http.NotFound(w, r)
	case answerNotFound:
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Grpc-Status", "5")
		w.Header().Set("Grpc-Message", "unknown service%3A web")
		w.WriteHeader(http.StatusOK)
	default:
		w.Header().Set("Content-Type", "application/grpc")
		w.WriteHeader(http.StatusOK)
		// flag 0, length 2, then field 1 varint: key 0x08, the value.
		w.Write([]byte{0, 0, 0, 0, 2, 0x08, byte(a)})
		w.Header().Set(http.TrailerPrefix+"Grpc-Status", "0")
	}
}

func newGRPCServer(t *testing.T, tls bool) (*grpcHealth, *httptest.Server) {
	g := new(grpcHealth)
	g.answer.Store(1)
	srv := httptest.NewUnstartedServer(g)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // failed handshakes are tested
	if tls {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetUnencryptedHTTP2(true) // h2c, prior knowledge
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return g, srv
}

func TestGRPC(t *testing.T) {
	t.Parallel()
	g, srv := newGRPCServer(t, false)
	addr := srv.Listener.Addr().String()
	m, rec := newManager(t, checks.Config{}, nil)
	mustAdd(t, m, checks.Definition{ID: "rpc", GRPC: addr + "/web", Interval: 50 * time.Millisecond})

	i := rec.waitFor(t, "rpc", 0, catalog.HealthPassing, "gRPC check "+addr+"/web: SERVING")
	if bad, _ := g.bad.Load().(string); bad != "" {
		t.Errorf("server saw a bad request: %s", bad)
	}
	// HealthCheckRequest{service: "web"}: flag 0, length 5, then field 1
	// length-delimited (key 0x0a), length 3, "web".
	want := []byte{0, 0, 0, 0, 5, 0x0a, 3, 'w', 'e', 'b'}
	if got, _ := g.lastReq.Load().([]byte); !bytes.Equal(got, want) {
		t.Errorf("request body: got % x, want % x", got, want)
	}
	g.answer.Store(2)
	i = rec.waitFor(t, "rpc", i, catalog.HealthCritical, "NOT_SERVING")
	g.answer.Store(1)
	i = rec.waitFor(t, "rpc", i, catalog.HealthPassing, "SERVING")
	g.answer.Store(answerNotFound)
	i = rec.waitFor(t, "rpc", i, catalog.HealthCritical, "NOT_FOUND: unknown service: web")
	g.answer.Store(answerHang)
	i = rec.waitFor(t, "rpc", i, catalog.HealthCritical, "deadline exceeded")
	g.answer.Store(answerHTTP404)
	i = rec.waitFor(t, "rpc", i, catalog.HealthCritical, "HTTP status 404")
	g.answer.Store(1)
	i = rec.waitFor(t, "rpc", i, catalog.HealthPassing, "SERVING")
	srv.Close()
	rec.waitFor(t, "rpc", i, catalog.HealthCritical, "connection refused")
}

func TestGRPCWholeServerOverTLS(t *testing.T) {
	t.Parallel()
	g, srv := newGRPCServer(t, true)
	addr := srv.Listener.Addr().String()
	m, rec := newManager(t, checks.Config{}, nil)
	mustAdd(t, m, checks.Definition{ID: "rpc", GRPC: addr, GRPCUseTLS: true, TLSSkipVerify: true, Interval: 50 * time.Millisecond})
	rec.waitFor(t, "rpc", 0, catalog.HealthPassing, "SERVING")
	// Service "" (the whole server) is an empty message.
	if got, _ := g.lastReq.Load().([]byte); !bytes.Equal(got, []byte{0, 0, 0, 0, 0}) {
		t.Errorf("request body: got % x, want 00 00 00 00 00", got)
	}
	if bad, _ := g.bad.Load().(string); bad != "" {
		t.Errorf("server saw a bad request: %s", bad)
	}
	// Without TLS the client speaks h2c to a TLS port and fails.
	mustAdd(t, m, checks.Definition{ID: "plain", GRPC: addr, Interval: 50 * time.Millisecond, Status: catalog.HealthPassing})
	rec.waitFor(t, "plain", 0, catalog.HealthCritical, "gRPC check "+addr+": ")
}
