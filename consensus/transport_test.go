package consensus

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/cairndns/cairn/rpc"
	"github.com/hashicorp/raft"
)

// Raft's pipelined replication can stop for good on a follower that
// answers appends with failure (hashicorp/raft#612); the leader must
// replicate with synchronous appends, each under the transport's I/O
// deadlines.
func TestNetworkTransportDoesNotPipeline(t *testing.T) {
	rc := rpc.DefaultServerConfig()
	rc.Addr = "127.0.0.1:0"
	rs, err := rpc.NewServer(rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rs.Shutdown(ctx)
	})
	conf := raft.DefaultConfig()
	conf.Logger = newHCLog(slog.New(slog.DiscardHandler))
	tr := newNetworkTransport(rs.RaftLayer(), conf)
	t.Cleanup(func() { _ = tr.Close() })
	p, err := tr.AppendEntriesPipeline("peer", raft.ServerAddress(rs.Addr().String()))
	if p != nil {
		_ = p.Close()
	}
	if !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("AppendEntriesPipeline: got %v, want raft.ErrPipelineReplicationNotSupported", err)
	}
}
