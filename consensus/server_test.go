package consensus

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

func startServer(t *testing.T, dir string) *Server {
	t.Helper()
	store, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NodeID, cfg.Address, cfg.DataDir, cfg.Bootstrap = "n1", "127.0.0.1:8300", dir, true
	cfg.SingleServerTiming()
	s, err := New(cfg, store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitForLeader(ctx); err != nil {
		s.Shutdown()
		t.Fatal(err)
	}
	return s
}

func register(t *testing.T, s *Server, svc *catalog.Service) {
	t.Helper()
	err := s.Register(context.Background(), &catalog.RegisterRequest{
		Node: "n1", Address: "10.0.0.1", Datacenter: "dc1", Service: svc,
	})
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
}

func serviceNames(t *testing.T, s *Server) map[string][]string {
	t.Helper()
	_, names, err := s.Store().Services(nil)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestRegisterIsAppliedBeforeReturn(t *testing.T) {
	s := startServer(t, "")
	defer s.Shutdown()
	register(t, s, &catalog.Service{Service: "web", Port: 80, Tags: []string{"v1"}})
	_, inst, err := s.Store().ServiceInstances(nil, "web", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(inst) != 1 || inst[0].Service.Port != 80 || inst[0].Node.Address != "10.0.0.1" {
		t.Fatalf("got instances %+v, want one web on 10.0.0.1:80", inst)
	}
	if err := s.Deregister(context.Background(), &catalog.DeregisterRequest{Node: "n1", ServiceID: "web"}); err != nil {
		t.Fatal(err)
	}
	if names := serviceNames(t, s); len(names) != 0 {
		t.Fatalf("got services %v after deregister, want none", names)
	}
}

func TestRegisterRejectsInvalidWithoutApplying(t *testing.T) {
	s := startServer(t, "")
	defer s.Shutdown()
	before := s.Store().Index()
	err := s.Register(context.Background(), &catalog.RegisterRequest{
		Node: "n1", Address: "10.0.0.1", Service: &catalog.Service{Service: "bad_name"},
	})
	var fe *catalog.FieldError
	if !errors.As(err, &fe) || fe.Field != "Service.Name" {
		t.Fatalf("got %v, want a FieldError on Service.Name", err)
	}
	if after := s.Store().Index(); after != before {
		t.Fatalf("index moved from %d to %d on a rejected write", before, after)
	}
}

// TestQueuedWriteOfAGoneCallerIsNotApplied: a write queued behind a
// snapshot restore (which holds writeMu) whose caller gives up before its
// turn comes is dropped, not applied for nobody.
func TestQueuedWriteOfAGoneCallerIsNotApplied(t *testing.T) {
	s := startServer(t, "")
	defer s.Shutdown()
	before := s.Store().Index()
	s.writeMu.Lock() // as a restore does
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Register(ctx, &catalog.RegisterRequest{
			Node: "n1", Address: "10.0.0.1", Service: &catalog.Service{Service: "web", Port: 80},
		})
	}()
	cancel()
	s.writeMu.Unlock()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Register of a gone caller: got %v, want context.Canceled", err)
	}
	if after := s.Store().Index(); after != before {
		t.Fatalf("index moved from %d to %d: the gone caller's write was applied", before, after)
	}
}

// TestRestartKeepsCatalog checks both recovery paths: replaying the log, and
// restoring a snapshot followed by the log after it.
func TestRestartKeepsCatalog(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	register(t, s, &catalog.Service{Service: "web", Port: 80})
	if err := s.Snapshot(); err != nil {
		t.Fatal(err)
	}
	register(t, s, &catalog.Service{Service: "db", Port: 5432})
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}

	s = startServer(t, dir)
	defer s.Shutdown()
	deadline := time.Now().Add(5 * time.Second)
	for {
		names := serviceNames(t, s)
		if _, web := names["web"]; web {
			if _, db := names["db"]; db {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after restart got services %v, want web and db", names)
		}
		time.Sleep(10 * time.Millisecond)
	}
	register(t, s, &catalog.Service{Service: "cache", Port: 6379})
	if _, ok := serviceNames(t, s)["cache"]; !ok {
		t.Fatal("write after restart not applied")
	}
}

func TestRemoveServerKeepsLastVoter(t *testing.T) {
	s := startServer(t, "")
	defer s.Shutdown()
	err := s.RemoveServer(context.Background(), "n1")
	if !errors.Is(err, ErrLastVoter) {
		t.Fatalf("RemoveServer of the only voter: got %v, want ErrLastVoter", err)
	}
	if err := s.RemoveServer(context.Background(), "unknown"); err != nil {
		t.Fatalf("RemoveServer of a stranger: got %v, want nil", err)
	}
	peers, err := s.Peers()
	if err != nil {
		t.Fatal(err)
	}
	want := []Peer{{ID: "n1", Address: "127.0.0.1:8300", Voter: true, Leader: true}}
	if !slices.Equal(peers, want) {
		t.Fatalf("got peers %+v, want %+v", peers, want)
	}
	if err := s.BootstrapCluster(want); err != nil {
		t.Fatalf("BootstrapCluster on a bootstrapped server: got %v, want nil", err)
	}
	if err := s.BootstrapCluster([]Peer{{ID: "other", Address: "127.0.0.1:1"}}); err == nil {
		t.Fatal("BootstrapCluster without this server: got nil, want an error")
	}
}

func TestValidateLayer(t *testing.T) {
	rs, err := rpc.NewServer(rpc.DefaultServerConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NodeID, cfg.Layer = "n1", rs.RaftLayer()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "consensus Layer") {
		t.Fatalf("Layer of an unstarted rpc server: got %v, want an error naming Layer", err)
	}
	cfg.Layer = nil
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "consensus Address") {
		t.Fatalf("neither Layer nor Address: got %v, want an error naming Address", err)
	}
}
