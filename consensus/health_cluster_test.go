package consensus_test

import (
	"fmt"
	"testing"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/rpc"
)

// TestCatalogEndpointHealthForwarding: a follower sends a health read to
// the leader unless it may answer it stale, and answers a stale one from
// its own store once it has caught up.
func TestCatalogEndpointHealthForwarding(t *testing.T) {
	nodes, p := startCatalogCluster(t)
	consensustest.WaitForLeader(t, nodes, within)
	f := catalogFollowers(nodes)
	catalogCall(t, p, f[0], rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
		Node: "client1", Address: "10.0.0.1", Service: &catalog.Service{Service: "web"},
		Checks: []*catalog.Check{{CheckID: "web-http", Type: "http", Status: catalog.HealthCritical, ServiceID: "web"}},
	}}, nil)

	for _, opts := range []rpc.QueryOptions{{}, {RequireConsistent: true}} {
		var got rpc.ChecksResponse
		catalogCall(t, p, f[1], rpc.MethodCatalogServiceChecks, &rpc.ServiceChecksRequest{QueryOptions: opts, Service: "web"}, &got)
		if len(got.Checks) != 1 || got.Checks[0].Type != "http" || got.LastContact != 0 || !got.KnownLeader {
			t.Errorf("ServiceChecks %+v on %s: got %d checks, meta %+v; want web-http, answered by the leader", opts, f[1].ID, len(got.Checks), got.QueryMeta)
		}
	}
	consensustest.WaitFor(t, within, func() error {
		var got rpc.ChecksResponse
		catalogCall(t, p, f[1], rpc.MethodCatalogChecksInState,
			&rpc.ChecksInStateRequest{QueryOptions: rpc.QueryOptions{AllowStale: true}, State: "critical"}, &got)
		if len(got.Checks) != 1 || got.Checks[0].CheckID != "web-http" || !got.KnownLeader {
			return fmt.Errorf("stale ChecksInState on %s: got %d checks, meta %+v", f[1].ID, len(got.Checks), got.QueryMeta)
		}
		return nil
	})
	var got rpc.ChecksResponse
	catalogCall(t, p, f[0], rpc.MethodCatalogNodeChecks, &rpc.NodeChecksRequest{Node: "client1"}, &got)
	if len(got.Checks) != 1 || got.Checks[0].Node != "client1" {
		t.Errorf("NodeChecks(client1) on %s: got %d checks, want web-http", f[0].ID, len(got.Checks))
	}
}
