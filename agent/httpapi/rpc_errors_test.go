package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// FailArgs names the error Failer.Fail returns.
type FailArgs struct{ Name string }

// FailReply is Failer's reply, never filled in.
type FailReply struct{ N int }

// Failer is an RPC service whose methods fail in the ways a server's do.
type Failer struct{ errs map[string]error }

func (f Failer) Fail(_ context.Context, a *FailArgs, _ *FailReply) error { return f.errs[a.Name] }

func (Failer) Panic(context.Context, *FailArgs, *FailReply) error { panic("the method broke") }

func (Failer) Block(ctx context.Context, _ *FailArgs, _ *FailReply) error {
	<-ctx.Done()
	return ctx.Err()
}

func (Failer) RPCNeeds() rpc.Needs {
	return rpc.Needs{"Fail": rpc.NeedPublic(), "Panic": rpc.NeedPublic(), "Block": rpc.NeedPublic()}
}

// httpStatusOf answers a catalog read that failed with err, as the HTTP
// API does, and returns the status and body.
func httpStatusOf(t *testing.T, err error) (int, string) {
	t.Helper()
	rec := serve(newServer(t, nil, &fakeCatalog{err: err}), http.MethodGet, "/v1/catalog/nodes", "")
	return rec.Code, rec.Body.String()
}

// TestEveryRPCErrorHasItsHTTPStatus walks every error the rpc layer can
// produce through the HTTP API's mapping: each sentinel rpc declares (read
// from its source, so a new one fails here until it is given a status) as
// a server sends it over the port, as Server.Call returns it in process,
// and as the caller's own; and the failures of a call itself (a refused or
// reset connection, a timeout, a closed pool or server, a panic, a codec
// mismatch, …), each produced for real. None is a 500 but those that mean
// cairn itself is broken: a codec mismatch or an oversized message (the
// two sides, or the limits and the data, disagree: a bug or a
// misconfiguration, not something a retry cures), a method that panicked,
// an unknown method and a server error without a code (a bug, or a failure
// nobody has described yet; each is logged).
func TestEveryRPCErrorHasItsHTTPStatus(t *testing.T) {
	t.Parallel()
	const unavailable, maybe = http.StatusServiceUnavailable, "may or may not have been applied"
	sentinels := map[string]struct {
		err    error
		status int
		body   string // in the body, when not ""
	}{
		"ErrTransport":              {rpc.ErrTransport, unavailable, ""},
		"ErrNotSent":                {fmt.Errorf("%w: %w", rpc.ErrTransport, rpc.ErrNotSent), unavailable, ""}, // never without ErrTransport
		"ErrCodec":                  {rpc.ErrCodec, http.StatusInternalServerError, ""},
		"ErrMessageTooLarge":        {rpc.ErrMessageTooLarge, http.StatusInternalServerError, ""},
		"ErrPoolClosed":             {rpc.ErrPoolClosed, unavailable, ""},
		"ErrServerClosed":           {rpc.ErrServerClosed, unavailable, ""},
		"ErrNoPathToDatacenter":     {rpc.ErrNoPathToDatacenter, unavailable, "No path to datacenter: "},
		"ErrUnknownDatacenter":      {rpc.ErrUnknownDatacenter, http.StatusBadRequest, "No path to datacenter: unknown datacenter"},
		"ErrRateLimited":            {rpc.ErrRateLimited, http.StatusTooManyRequests, ""},
		"ErrTooManyCalls":           {rpc.ErrTooManyCalls, http.StatusTooManyRequests, ""},
		"ErrUnknownOutcome":         {rpc.ErrUnknownOutcome, unavailable, maybe},
		"ErrServerStopping":         {rpc.ErrServerStopping, unavailable, ""},
		"ErrNoLeader":               {rpc.ErrNoLeader, unavailable, ""},
		"ErrNotLeader":              {rpc.ErrNotLeader, unavailable, ""},
		"ErrConflictingConsistency": {rpc.ErrConflictingConsistency, http.StatusBadRequest, ""},
		"ErrPermissionDenied":       {rpc.ErrPermissionDenied, http.StatusForbidden, ""},
		"ErrACLNotFound":            {rpc.ErrACLNotFound, http.StatusForbidden, ""},
		"ErrACLDisabled":            {rpc.ErrACLDisabled, http.StatusUnauthorized, ""},
		"ErrStreamEnded":            {rpc.ErrStreamEnded, unavailable, ""},
		"ErrServerHung":             {fmt.Errorf("%w: %w", rpc.ErrTransport, rpc.ErrServerHung), unavailable, ""}, // never without ErrTransport
	}
	if got, want := rpctest.ExportedErrors(t, "../../rpc"), slices.Sorted(maps.Keys(sentinels)); !slices.Equal(got, want) {
		t.Fatalf("rpc declares the sentinels %v; this test knows %v: give a new one its wire code and HTTP status, and add it here", got, want)
	}
	// What a server's own failures are over the wire: a hop it lost or
	// ran out of time for is a server that stopped before answering (a
	// read is tried elsewhere, a write's fate is unknown).
	overWire := map[string]struct {
		status int
		is     error
	}{
		"ErrTransport":       {unavailable, rpc.ErrServerStopping},
		"ErrNotSent":         {unavailable, rpc.ErrServerStopping},
		"ErrServerHung":      {unavailable, rpc.ErrServerStopping},
		"ErrPoolClosed":      {unavailable, rpc.ErrServerStopping},
		"ErrServerClosed":    {unavailable, rpc.ErrServerStopping},
		"ErrCodec":           {http.StatusInternalServerError, nil},
		"ErrMessageTooLarge": {http.StatusInternalServerError, nil},
	}

	errs := map[string]error{
		"field":            fmt.Errorf("register: %w", &catalog.FieldError{Field: "Port", Reason: "is out of range"}),
		"not found":        fmt.Errorf("node %q: %w", "n9", catalog.ErrNotFound),
		"outcome, leader":  fmt.Errorf("raft apply: %w: %w: leadership lost", rpc.ErrUnknownOutcome, rpc.ErrNotLeader),
		"forward deadline": fmt.Errorf("forward to leader: %w", context.DeadlineExceeded),
		"forward canceled": fmt.Errorf("forward to leader: %w", context.Canceled),
		"uncoded":          errors.New("raft apply: something nobody described"),
	}
	for name, s := range sentinels {
		errs[name] = fmt.Errorf("doing something: %w", s.err)
	}
	srv := rpctest.StartServer(t, map[string]any{"Failer": Failer{errs: errs}})
	pool := rpctest.NewPool(t)
	addr := srv.Addr().String()
	call := func(t *testing.T, method string, args *FailArgs) (overPort, inProcess error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return pool.Call(ctx, addr, method, args, &FailReply{}), srv.Call(ctx, method, args, &FailReply{})
	}
	check := func(t *testing.T, what string, err error, status int, body string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", what)
			return
		}
		got, b := httpStatusOf(t, err)
		if got != status {
			t.Errorf("%s: %v is HTTP %d, want %d", what, err, got, status)
		}
		if !strings.Contains(b, body) {
			t.Errorf("%s: body %q, want it to say %q", what, b, body)
		}
	}

	for name, s := range sentinels {
		t.Run(name, func(t *testing.T) {
			check(t, "the caller's own", fmt.Errorf("rpc Catalog.Nodes: %w", s.err), s.status, s.body)
			overPort, inProcess := call(t, "Failer.Fail", &FailArgs{Name: name})
			want, is := s.status, s.err
			if w, ok := overWire[name]; ok {
				want, is = w.status, w.is
			}
			for _, c := range []struct {
				door string
				err  error
			}{{"over the port", overPort}, {"in process", inProcess}} {
				if is != nil && !errors.Is(c.err, is) {
					t.Errorf("%s: %v does not wrap %v: it has no wire code", c.door, c.err, is)
				}
				check(t, c.door, c.err, want, s.body)
			}
		})
	}

	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"field", http.StatusBadRequest, `"field":"Port"`},
		{"not found", http.StatusNotFound, ""},
		{"outcome, leader", unavailable, maybe},
		{"forward deadline", unavailable, ""},
		{"forward canceled", unavailable, ""},
		// A server's error no sentinel describes: a bug, or a failure
		// nobody has given a code yet (logged).
		{"uncoded", http.StatusInternalServerError, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			overPort, inProcess := call(t, "Failer.Fail", &FailArgs{Name: tc.name})
			check(t, "over the port", overPort, tc.status, tc.body)
			check(t, "in process", inProcess, tc.status, tc.body)
		})
	}

	// The failures of a call itself, each produced for real.
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := ln.Addr().String()
		_ = ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = pool.Call(ctx, closed, "Failer.Fail", &FailArgs{}, &FailReply{})
		if !errors.Is(err, rpc.ErrNotSent) {
			t.Errorf("got %v, want one wrapping ErrNotSent", err)
		}
		check(t, "refused", err, unavailable, "")
	})
	t.Run("connection reset", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_ = c.(*net.TCPConn).SetLinger(0) // a reset, not a FIN
				_ = c.Close()
			}
		}()
		defer func() { _ = ln.Close(); <-done }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = pool.Call(ctx, ln.Addr().String(), "Failer.Fail", &FailArgs{}, &FailReply{})
		if !errors.Is(err, rpc.ErrTransport) {
			t.Errorf("got %v, want one wrapping ErrTransport", err)
		}
		check(t, "reset", err, unavailable, "")
	})
	t.Run("timeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := pool.Call(ctx, addr, "Failer.Block", &FailArgs{}, &FailReply{})
		check(t, "timeout", err, unavailable, "")
	})
	t.Run("pool closed", func(t *testing.T) {
		p, err := rpc.NewPool(rpc.DefaultPoolConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = p.Close()
		check(t, "pool closed", p.Call(context.Background(), addr, "Failer.Fail", &FailArgs{}, &FailReply{}), unavailable, "")
	})
	t.Run("server closed", func(t *testing.T) {
		s, err := rpc.NewServer(rpc.DefaultServerConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		check(t, "server closed", s.Call(context.Background(), "Failer.Fail", &FailArgs{}, &FailReply{}), unavailable, "")
	})
	t.Run("too many calls", func(t *testing.T) {
		overPort, inProcess := call(t, "Failer.Fail", &FailArgs{Name: "ErrTooManyCalls"})
		check(t, "over the port", overPort, http.StatusTooManyRequests, "")
		check(t, "in process", inProcess, http.StatusTooManyRequests, "")
	})
	// cairn broken: 500.
	t.Run("remote panic", func(t *testing.T) {
		overPort, inProcess := call(t, "Failer.Panic", &FailArgs{})
		check(t, "over the port", overPort, http.StatusInternalServerError, "")
		check(t, "in process", inProcess, http.StatusInternalServerError, "")
	})
	t.Run("unknown method", func(t *testing.T) {
		overPort, inProcess := call(t, "Failer.Nope", &FailArgs{})
		check(t, "over the port", overPort, http.StatusInternalServerError, "")
		check(t, "in process", inProcess, http.StatusInternalServerError, "")
	})
	t.Run("codec mismatch", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := srv.Call(ctx, "Failer.Fail", &struct{ Other int }{}, &FailReply{})
		if !errors.Is(err, rpc.ErrCodec) {
			t.Errorf("got %v, want one wrapping ErrCodec", err)
		}
		check(t, "codec", err, http.StatusInternalServerError, "")
	})
	t.Run("message too large", func(t *testing.T) {
		cfg := rpc.DefaultPoolConfig()
		cfg.MaxMessageSize = 1024
		p, err := rpc.NewPool(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = p.Call(ctx, addr, "Failer.Fail", &FailArgs{Name: strings.Repeat("x", 4096)}, &FailReply{})
		if !errors.Is(err, rpc.ErrMessageTooLarge) {
			t.Errorf("got %v, want one wrapping ErrMessageTooLarge", err)
		}
		check(t, "too large", err, http.StatusInternalServerError, "")
	})
}
