package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// twoDCs is dc1 (one server and a client) and dc2 (three servers), whose
// servers found each other in the WAN pool.
type twoDCs struct {
	dc1, dc2 *agenttest.Cluster
	client   *agent.Agent
	pool     *rpc.Pool
}

// startTwoDCs starts both datacenters, each server joining the WAN pool
// through a server of the other (as retry_join_wan usually lists them),
// and waits until every server sees all four alive there.
func startTwoDCs(t *testing.T) *twoDCs {
	t.Helper()
	dc1Cfgs := agenttest.DatacenterConfigs(t, "dc1", 1)
	dc2Cfgs := agenttest.DatacenterConfigs(t, "dc2", 3)
	dc1Cfgs[0].JoinWAN = []string{agenttest.WANAddr(dc2Cfgs[0])}
	for i := range dc2Cfgs {
		dc2Cfgs[i].JoinWAN = []string{agenttest.WANAddr(dc1Cfgs[0])}
	}
	d := &twoDCs{dc1: agenttest.StartConfigs(t, dc1Cfgs), dc2: agenttest.StartConfigs(t, dc2Cfgs), pool: rpctest.NewPool(t)}
	d.client = agenttest.Start(t, agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(dc1Cfgs[0])))

	servers := append(slices.Clone(d.dc1.Agents), d.dc2.Agents...)
	wanAlive(t, servers, "s1.dc1", "s1.dc2", "s2.dc2", "s3.dc2")
	return d
}

func apiClient(t *testing.T, a *agent.Agent) *api.Client {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// call makes one RPC to a server, as a client agent does.
func (d *twoDCs) call(addr, method string, args, reply any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return d.pool.Call(ctx, addr, method, args, reply)
}

// instances reads a service's instances in dc through the server at addr.
func (d *twoDCs) instances(addr, dc, service string, stale bool) ([]catalog.ServiceInstance, error) {
	var reply rpc.ServiceInstancesResponse
	args := &rpc.ServiceInstancesRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: stale}, Service: service}
	err := d.call(addr, rpc.MethodCatalogServiceInstances, args, &reply)
	return reply.Instances, err
}

func register(dc, node, addr, service string) *rpc.RegisterRequest {
	return &rpc.RegisterRequest{
		WriteRequest: rpc.WriteRequest{Datacenter: dc},
		Registration: catalog.RegisterRequest{Node: node, Address: addr, Service: &catalog.Service{Service: service, Port: 80}},
	}
}

// TestTwoDatacenters: a service registered only in dc2 is read, and a
// write to dc2 made, through dc1's server; the datacenters are listed
// everywhere; dc2 keeps answering with one server gone, and once all are
// gone its requests fail fast with no path while dc1's keep working.
func TestTwoDatacenters(t *testing.T) {
	t.Parallel()
	d := startTwoDCs(t)
	dc1Srv, dc2Srv := d.dc1.RPCAddr(0), d.dc2.RPCAddr(0)

	for _, a := range []*agent.Agent{d.dc1.Agents[0], d.dc2.Agents[1], d.client} {
		waittest.For(t, 10*time.Second, "datacenters listed", func() error {
			var got []string
			if err := getJSON(a, "/v1/catalog/datacenters", &got); err != nil {
				return err
			}
			if want := []string{"dc1", "dc2"}; !slices.Equal(got, want) {
				return fmt.Errorf("%s lists %v, want %v", a.HTTPAddr(), got, want)
			}
			return nil
		})
	}

	// web lives in dc2 only (registered once dc2 has a leader).
	waittest.For(t, 30*time.Second, "web registered in dc2", func() error {
		return d.call(dc2Srv, rpc.MethodCatalogRegister, register("", "web-node", "10.0.2.10", "web"), nil)
	})
	for _, stale := range []bool{false, true} {
		waittest.For(t, 10*time.Second, "web of dc2 read through dc1", func() error {
			got, err := d.instances(dc1Srv, "dc2", "web", stale)
			if err != nil {
				return err
			}
			if len(got) != 1 || got[0].Node.Node != "web-node" || got[0].Node.Datacenter != "dc2" {
				return fmt.Errorf("stale %v: got %+v, want web-node of dc2", stale, got)
			}
			return nil
		})
	}
	if got, err := d.instances(dc1Srv, "", "web", true); err != nil || len(got) != 0 {
		t.Errorf("web in dc1: got %d instances (%v), want none", len(got), err)
	}

	// A write for dc2 sent to dc1 lands in dc2's catalog only.
	if err := d.call(dc1Srv, rpc.MethodCatalogRegister, register("dc2", "db-node", "10.0.2.20", "db"), nil); err != nil {
		t.Fatalf("register db in dc2 through dc1: %v", err)
	}
	if got, err := d.instances(dc2Srv, "", "db", false); err != nil || len(got) != 1 || got[0].Node.Datacenter != "dc2" {
		t.Errorf("db read in dc2: got %+v (%v), want db-node of dc2", got, err)
	}
	if got, err := d.instances(dc1Srv, "", "db", true); err != nil || len(got) != 0 {
		t.Errorf("db in dc1: got %d instances (%v), want none", len(got), err)
	}

	// A datacenter no server knows.
	if _, err := d.instances(dc1Srv, "dc9", "web", false); !errors.Is(err, rpc.ErrNoPathToDatacenter) {
		t.Errorf("web in dc9: got %v, want no path to datacenter", err)
	}

	// The WAN surfaces: a client is in no WAN pool, and lists no members
	// of it, as Consul's; a server joins again harmlessly; the server
	// remembers where the WAN members are.
	if ms, err := apiClient(t, d.client).Agent().MembersWAN(context.Background()); err != nil || len(ms) != 0 {
		t.Errorf("WAN members of a client: got %v, %v; want none", ms, err)
	}
	if err := apiClient(t, d.dc1.Agents[0]).Agent().JoinWAN(context.Background(), agenttest.WANAddr(d.dc2.Configs[1])); err != nil {
		t.Errorf("join the WAN pool again: %v", err)
	}
	waittest.For(t, 10*time.Second, "the WAN member snapshot", func() error {
		data, err := os.ReadFile(filepath.Join(d.dc1.Configs[0].DataDir, "gossip", "wan-members.json"))
		if err != nil {
			return err
		}
		var addrs []string
		if err := json.Unmarshal(data, &addrs); err != nil {
			return err
		}
		if len(addrs) != 3 {
			return fmt.Errorf("got %v, want dc2's three servers", addrs)
		}
		return nil
	})

	// One dc2 server gone: dc2 still answers through dc1.
	agenttest.Stop(t, d.dc2.Agents[2])
	waittest.For(t, 30*time.Second, "web of dc2 read through dc1 with a dc2 server gone", func() error {
		got, err := d.instances(dc1Srv, "dc2", "web", false)
		if err == nil && len(got) != 1 {
			err = fmt.Errorf("got %d instances, want 1", len(got))
		}
		return err
	})

	// Every dc2 server gone: its requests fail fast, dc1's do not.
	agenttest.Stop(t, d.dc2.Agents[1])
	agenttest.Stop(t, d.dc2.Agents[0])
	waittest.For(t, 30*time.Second, "no path to dc2", func() error {
		start := time.Now()
		_, err := d.instances(dc1Srv, "dc2", "web", false)
		if !errors.Is(err, rpc.ErrNoPathToDatacenter) {
			return fmt.Errorf("got %v, want no path to datacenter", err)
		}
		if took := time.Since(start); took > 2*time.Second {
			return fmt.Errorf("failed after %s, want fast", took)
		}
		return nil
	})
	if _, err := d.instances(dc1Srv, "dc1", "web", false); err != nil {
		t.Errorf("dc1 read with dc2 gone: %v", err)
	}
	waittest.For(t, 10*time.Second, "dc2 forgotten after its servers left", func() error {
		got, err := apiClient(t, d.client).Catalog().Datacenters(context.Background())
		if err == nil && !slices.Equal(got, []string{"dc1"}) {
			err = fmt.Errorf("got %v, want [dc1]", got)
		}
		return err
	})
}

// TestEveryServerJoinsTheWANPool: two datacenters of three servers,
// started interleaved and in reverse, where a single server names a
// single server of the other datacenter in JoinWAN. Every server of both
// ends up in the WAN pool all the same: each pulls the servers of its own
// datacenter in (found in LAN gossip), so one link is enough.
func TestEveryServerJoinsTheWANPool(t *testing.T) {
	t.Parallel()
	dc1 := agenttest.DatacenterConfigs(t, "dc1", 3)
	dc2 := agenttest.DatacenterConfigs(t, "dc2", 3)
	dc2[2].JoinWAN = []string{agenttest.WANAddr(dc1[1])}
	var servers []*agent.Agent
	for i := 2; i >= 0; i-- {
		servers = append(servers, agenttest.Start(t, dc2[i]), agenttest.Start(t, dc1[i]))
	}
	start := time.Now()
	wanAlive(t, servers, "s1.dc1", "s1.dc2", "s2.dc1", "s2.dc2", "s3.dc1", "s3.dc2")
	t.Logf("every server saw six alive %s after the last start", time.Since(start).Round(time.Millisecond))
}

// wanAlive waits until every one of servers sees exactly want (sorted
// "<node>.<dc>" names) alive in the WAN pool.
func wanAlive(t *testing.T, servers []*agent.Agent, want ...string) {
	t.Helper()
	waittest.For(t, 30*time.Second, fmt.Sprintf("every server sees %d alive in the WAN pool", len(want)), func() error {
		for _, a := range servers {
			members, err := apiClient(t, a).Agent().MembersWAN(context.Background())
			if err != nil {
				return err
			}
			var names []string
			for _, m := range members {
				if m.Status == api.MemberAlive {
					names = append(names, m.Name)
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, want) {
				return fmt.Errorf("%s sees %v alive, want %v", a.HTTPAddr(), names, want)
			}
		}
		return nil
	})
}

// TestKVAcrossDatacenters: ?dc=dc2 on the key/value store and on a
// transaction, sent to dc1's client agent, reads and writes dc2's store
// through the WAN, as the catalog's requests do; dc1's own store is not
// touched.
func TestKVAcrossDatacenters(t *testing.T) {
	t.Parallel()
	d := startTwoDCs(t)
	ctx := t.Context()
	viaDC1 := apiClient(t, d.client).KV()
	inDC2 := apiClient(t, d.dc2.Agents[0]).KV()
	dc2 := &api.WriteOptions{Datacenter: "dc2"}
	waittest.For(t, 30*time.Second, "a write to dc2 through dc1", func() error {
		return viaDC1.Put(ctx, &api.KVPair{Key: "app/color", Value: []byte("blue")}, dc2)
	})
	if p, _, err := inDC2.Get(ctx, "app/color", nil); err != nil || p == nil || string(p.Value) != "blue" {
		t.Fatalf("dc2's own agent reads app/color: got %+v, %v; want blue", p, err)
	}
	if p, _, err := viaDC1.Get(ctx, "app/color", nil); err != nil || p != nil {
		t.Errorf("dc1's store: got %+v, %v; want no app/color", p, err)
	}
	p, meta, err := viaDC1.Get(ctx, "app/color", &api.QueryOptions{Datacenter: "dc2"})
	if err != nil || p == nil || string(p.Value) != "blue" {
		t.Fatalf("dc2's app/color read through dc1: got %+v, %v", p, err)
	}

	// A CAS against dc2's index, and a transaction, both through dc1.
	if ok, err := viaDC1.CAS(ctx, &api.KVPair{Key: "app/color", Value: []byte("red"), ModifyIndex: meta.LastIndex}, dc2); err != nil || !ok {
		t.Fatalf("CAS in dc2 through dc1: got %v, %v; want done", ok, err)
	}
	ok, resp, _, err := apiClient(t, d.client).Txn().Txn(ctx, api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: "app/size"}},
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: "app/size", Value: []byte("xl")}},
		{KV: &api.KVTxnOp{Verb: api.KVGet, Key: "app/color"}},
	}, &api.QueryOptions{Datacenter: "dc2"})
	if err != nil || !ok || len(resp.Results) != 2 || string(resp.Results[1].KV.Value) != "red" {
		t.Fatalf("txn in dc2 through dc1: got %v, %+v, %v; want done with app/color red", ok, resp, err)
	}
	keys, _, err := inDC2.Keys(ctx, "app/", "", nil)
	if err != nil || !slices.Equal(keys, []string{"app/color", "app/size"}) {
		t.Errorf("dc2's keys: got %v, %v; want app/color and app/size", keys, err)
	}
}
