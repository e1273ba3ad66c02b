package compat_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/gossip/gossiptest"
	"github.com/cairndns/cairn/internal/waittest"
	consul "github.com/hashicorp/consul/api"
)

// TestConsulClientKeyring rotates the gossip key with Consul's client
// through a client agent, and reads each pool back with KeyringList: the
// WAN pool and the datacenter's LAN pool, in Consul's shape.
func TestConsulClientKeyring(t *testing.T) {
	t.Parallel()
	oldKey, newKey := gossiptest.NewKey(t), gossiptest.NewKey(t)
	scfg := agenttest.ServerConfig(t, "s1", 1)
	scfg.EncryptKey = oldKey
	ccfg := agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(scfg))
	ccfg.EncryptKey = oldKey
	agenttest.Start(t, scfg)
	cl := agenttest.Start(t, ccfg)
	client, err := consul.NewClient(&consul.Config{Address: cl.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	op := client.Operator()
	waittest.For(t, 30*time.Second, "both agents in the LAN pool", func() error {
		pools, err := op.KeyringList(nil)
		if err != nil {
			return err
		}
		if len(pools) != 2 || pools[1].NumNodes != 2 {
			return fmt.Errorf("%d pools", len(pools))
		}
		return nil
	})
	for _, step := range []func(string, *consul.WriteOptions) error{op.KeyringInstall, op.KeyringUse} {
		if err := step(newKey, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := op.KeyringRemove(oldKey, nil); err != nil {
		t.Fatal(err)
	}
	pools, err := op.KeyringList(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []consul.KeyringResponse{
		{WAN: true, Datacenter: "dc1", Keys: map[string]int{newKey: 1}, PrimaryKeys: map[string]int{newKey: 1}, NumNodes: 1},
		{WAN: false, Datacenter: "dc1", Keys: map[string]int{newKey: 2}, PrimaryKeys: map[string]int{newKey: 2}, NumNodes: 2},
	}
	if len(pools) != len(want) {
		t.Fatalf("KeyringList: %d pools, want %d", len(pools), len(want))
	}
	for i, w := range want {
		p := pools[i]
		if p.WAN != w.WAN || p.Datacenter != w.Datacenter || !maps.Equal(p.Keys, w.Keys) ||
			!maps.Equal(p.PrimaryKeys, w.PrimaryKeys) || p.NumNodes != w.NumNodes || len(p.Messages) != 0 {
			t.Errorf("pool %d: got %+v, want %+v", i, *p, w)
		}
	}
	if err := op.KeyringRemove(newKey, nil); err == nil {
		t.Error("removing the primary key: got no error")
	}
}
