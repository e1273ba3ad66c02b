package consensustest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/rpc"
)

// StartCatalogServer starts a bootstrapped single-server cluster of
// datacenter dc1 with its Catalog and Status endpoints on an RPC server on
// 127.0.0.1:0 (its config changed by edit, unless nil), waits for it to
// lead and returns its RPC address: a server for a door or an rpc pool to
// call. Everything stops when the test ends: the endpoint, its
// forwarding pool, Raft, then RPC.
func StartCatalogServer(t testing.TB, edit func(*rpc.ServerConfig)) string {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	rcfg := rpc.DefaultServerConfig()
	rcfg.Addr = "127.0.0.1:0"
	if edit != nil {
		edit(&rcfg)
	}
	rs, err := rpc.NewServer(rcfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rs.Shutdown(ctx); err != nil {
			t.Errorf("rpc Shutdown: %v", err)
		}
	})
	store, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	cfg := consensus.DefaultConfig()
	cfg.NodeID, cfg.DataDir, cfg.Layer, cfg.Bootstrap = "s1", t.TempDir(), rs.RaftLayer(), true
	cfg.SingleServerTiming()
	srv, err := consensus.New(cfg, store, logger)
	if err != nil {
		t.Fatalf("consensus.New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Shutdown(); err != nil {
			t.Errorf("consensus Shutdown: %v", err)
		}
	})
	forward, err := rpc.NewPool(rpc.DefaultPoolConfig(), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = forward.Close() })
	ccfg := consensus.DefaultCatalogConfig()
	ccfg.Datacenter = "dc1"
	cat, err := consensus.NewCatalog(srv, forward, ccfg)
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	t.Cleanup(cat.Close)
	if err := cat.Publish(rs); err != nil {
		t.Fatal(err)
	}
	status, err := consensus.NewStatus(srv, "dc1", cat)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Register(rpc.StatusEndpoint, status); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.WaitForLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return rs.Addr().String()
}
