package compat_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	consul "github.com/hashicorp/consul/api"
)

// newConsulClusterClient starts a three-server cluster and a client agent
// joined to it, and returns Consul's client for the client agent once a KV
// write goes through it (a server and a leader are known).
func newConsulClusterClient(t *testing.T) *consul.Client {
	t.Helper()
	cl := agenttest.StartCluster(t, 3)
	a := agenttest.Start(t, agenttest.ClientConfig(t, "c1", cl.GossipAddr(0), cl.GossipAddr(1), cl.GossipAddr(2)))
	c, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	waittest.For(t, 30*time.Second, "a KV write through the client agent", func() error {
		_, err := c.KV().Put(&consul.KVPair{Key: "ready", Value: []byte("1")}, nil)
		return err
	})
	return c
}

// TestConsulClientKV walks Consul's client through the key/value store of
// a three-server cluster, through a client agent: Put, Get, List, Keys,
// CAS, DeleteCAS, DeleteTree, and blocking Gets that return on a write and
// on a delete.
func TestConsulClientKV(t *testing.T) {
	t.Parallel()
	kv := newConsulClusterClient(t).KV()

	if _, err := kv.Put(&consul.KVPair{Key: "app/config", Value: []byte("v1"), Flags: 42}, nil); err != nil {
		t.Fatalf("Put: %v", err)
	}
	p, meta, err := kv.Get("app/config", nil)
	if err != nil || p == nil {
		t.Fatalf("Get: got %+v, %v; want the pair", p, err)
	}
	if p.Key != "app/config" || string(p.Value) != "v1" || p.Flags != 42 || p.CreateIndex == 0 || p.ModifyIndex != p.CreateIndex || p.LockIndex != 0 || p.Session != "" {
		t.Errorf("Get: got %+v", p)
	}
	if meta.LastIndex != p.ModifyIndex || !meta.KnownLeader {
		t.Errorf("Get meta: got %+v, want index %d and a known leader", meta, p.ModifyIndex)
	}
	if p, meta, err := kv.Get("nosuch", nil); err != nil || p != nil || meta.LastIndex == 0 {
		t.Errorf("Get(nosuch): got %+v, %+v, %v; want nil with an index", p, meta, err)
	}
	// A consistent read sees the write; a stale one, from any server,
	// sees it once that server has applied it.
	if got, _, err := kv.Get("app/config", &consul.QueryOptions{RequireConsistent: true}); err != nil || got == nil || string(got.Value) != "v1" {
		t.Errorf("consistent Get: got %+v, %v; want v1", got, err)
	}
	waittest.For(t, 10*time.Second, "a stale Get of app/config", func() error {
		got, _, err := kv.Get("app/config", &consul.QueryOptions{AllowStale: true})
		if err == nil && (got == nil || string(got.Value) != "v1") {
			err = fmt.Errorf("got %+v, want v1", got)
		}
		return err
	})

	// CAS: 0 creates only, a stale index is refused, the current writes.
	if ok, _, err := kv.CAS(&consul.KVPair{Key: "app/config", Value: []byte("x"), ModifyIndex: 0}, nil); err != nil || ok {
		t.Errorf("CAS(0) of an existing key: got %v, %v; want false", ok, err)
	}
	if ok, _, err := kv.CAS(&consul.KVPair{Key: "app/config", Value: []byte("x"), ModifyIndex: p.ModifyIndex - 1}, nil); err != nil || ok {
		t.Errorf("CAS with a stale index: got %v, %v; want false", ok, err)
	}
	if ok, _, err := kv.CAS(&consul.KVPair{Key: "app/config", Value: []byte("v2"), ModifyIndex: p.ModifyIndex}, nil); err != nil || !ok {
		t.Errorf("CAS with the current index: got %v, %v; want true", ok, err)
	}
	if ok, _, err := kv.CAS(&consul.KVPair{Key: "app/new", Value: []byte("n")}, nil); err != nil || !ok {
		t.Errorf("CAS(0) of a new key: got %v, %v; want true", ok, err)
	}
	for _, k := range []string{"app/b/c", "app/b/d", "other/x"} {
		if _, err := kv.Put(&consul.KVPair{Key: k, Value: []byte(k)}, nil); err != nil {
			t.Fatalf("Put(%s): %v", k, err)
		}
	}

	pairs, _, err := kv.List("app/", nil)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var keys []string
	for _, p := range pairs {
		keys = append(keys, p.Key)
	}
	if want := []string{"app/b/c", "app/b/d", "app/config", "app/new"}; !slices.Equal(keys, want) {
		t.Errorf("List(app/): got %v, want %v", keys, want)
	}
	// A write sets the flags too: the CAS left them 0.
	if len(pairs) == 4 && (pairs[2].Flags != 0 || string(pairs[2].Value) != "v2") {
		t.Errorf("List(app/) app/config: got %+v, want flags 0, value v2", pairs[2])
	}
	if got, _, err := kv.Keys("app/", "/", nil); err != nil || !slices.Equal(got, []string{"app/b/", "app/config", "app/new"}) {
		t.Errorf("Keys(app/, /): got %v, %v", got, err)
	}
	if got, _, err := kv.Keys("", "/", nil); err != nil || !slices.Equal(got, []string{"app/", "other/", "ready"}) {
		t.Errorf("Keys(\"\", /): got %v, %v", got, err)
	}
	if got, _, err := kv.Keys("none/", "", nil); err != nil || got != nil {
		t.Errorf("Keys(none/): got %v, %v; want none", got, err)
	}

	cur, _, err := kv.Get("app/new", nil)
	if err != nil || cur == nil {
		t.Fatalf("Get(app/new): %+v, %v", cur, err)
	}
	if ok, _, err := kv.DeleteCAS(&consul.KVPair{Key: "app/new", ModifyIndex: cur.ModifyIndex - 1}, nil); err != nil || ok {
		t.Errorf("DeleteCAS with a stale index: got %v, %v; want false", ok, err)
	}
	if ok, _, err := kv.DeleteCAS(&consul.KVPair{Key: "app/new", ModifyIndex: cur.ModifyIndex}, nil); err != nil || !ok {
		t.Errorf("DeleteCAS with the index: got %v, %v; want true", ok, err)
	}
	if _, err := kv.DeleteTree("app/b/", nil); err != nil {
		t.Fatalf("DeleteTree: %v", err)
	}
	if got, _, err := kv.Keys("app/", "", nil); err != nil || !slices.Equal(got, []string{"app/config"}) {
		t.Errorf("Keys(app/) after DeleteTree: got %v, %v; want [app/config]", got, err)
	}
	if _, err := kv.Delete("other/x", nil); err != nil {
		t.Errorf("Delete: %v", err)
	}
	if p, _, err := kv.Get("other/x", nil); err != nil || p != nil {
		t.Errorf("Get after Delete: got %+v, %v; want nil", p, err)
	}
}

// TestConsulClientKVBlockingGet: Consul's client waits in a blocking Get
// until the key changes, and is told when it is deleted.
func TestConsulClientKVBlockingGet(t *testing.T) {
	t.Parallel()
	kv := newConsulClusterClient(t).KV()
	if _, err := kv.Put(&consul.KVPair{Key: "watched", Value: []byte("1")}, nil); err != nil {
		t.Fatal(err)
	}
	_, meta, err := kv.Get("watched", nil)
	if err != nil {
		t.Fatal(err)
	}

	// Nothing changes: the wait ends with the same index.
	start := time.Now()
	p, m, err := kv.Get("watched", &consul.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 200 * time.Millisecond})
	if err != nil || m.LastIndex != meta.LastIndex || string(p.Value) != "1" {
		t.Errorf("blocking Get without a change: got %+v at %d, %v; want 1 at %d", p, m.LastIndex, err, meta.LastIndex)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Errorf("blocking Get without a change returned after %s, want it to wait about 200ms", waited)
	}

	type result struct {
		p    *consul.KVPair
		meta *consul.QueryMeta
		err  error
	}
	blockingGet := func(index uint64) <-chan result {
		ch := make(chan result, 1)
		go func() {
			p, m, err := kv.Get("watched", &consul.QueryOptions{WaitIndex: index, WaitTime: time.Minute})
			ch <- result{p, m, err}
		}()
		return ch
	}
	await := func(ch <-chan result) result {
		t.Helper()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("blocking Get: %v", r.err)
			}
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("the blocking Get did not return on the change")
		}
		return result{err: errors.New("unreachable")}
	}

	ch := blockingGet(meta.LastIndex)
	if _, err := kv.Put(&consul.KVPair{Key: "watched", Value: []byte("2")}, nil); err != nil {
		t.Fatal(err)
	}
	r := await(ch)
	if r.p == nil || string(r.p.Value) != "2" || r.meta.LastIndex <= meta.LastIndex {
		t.Errorf("after a write: got %+v at %d, want 2 at an index past %d", r.p, r.meta.LastIndex, meta.LastIndex)
	}

	ch = blockingGet(r.meta.LastIndex)
	if _, err := kv.Delete("watched", nil); err != nil {
		t.Fatal(err)
	}
	d := await(ch)
	if d.p != nil || d.meta.LastIndex <= r.meta.LastIndex {
		t.Errorf("after a delete: got %+v at %d, want nil at an index past %d", d.p, d.meta.LastIndex, r.meta.LastIndex)
	}
}

// TestConsulClientKVACL: with ACLs on, Consul's client gets a 403 for a key
// its token may not write or read, and lists leave such keys out.
func TestConsulClientKVACL(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.ACL.Enabled = true
	cfg.ACL.DefaultPolicy = "deny"
	a := agenttest.Start(t, cfg)
	newClient := func(token string) *consul.Client {
		c, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String(), Token: token})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	boot, _, err := newClient("").ACL().Bootstrap()
	if err != nil {
		t.Fatalf("ACL.Bootstrap: %v", err)
	}
	mgmt := newClient(boot.SecretID)
	if _, _, err := mgmt.ACL().PolicyCreate(&consul.ACLPolicy{Name: "app", Rules: `key_prefix "app/" { policy = "write" }`}, nil); err != nil {
		t.Fatalf("ACL.PolicyCreate: %v", err)
	}
	tok, _, err := mgmt.ACL().TokenCreate(&consul.ACLToken{Policies: []*consul.ACLTokenPolicyLink{{Name: "app"}}}, nil)
	if err != nil {
		t.Fatalf("ACL.TokenCreate: %v", err)
	}
	app := newClient(tok.SecretID).KV()

	if _, err := app.Put(&consul.KVPair{Key: "app/x", Value: []byte("1")}, nil); err != nil {
		t.Fatalf("Put(app/x) with the app token: %v", err)
	}
	var se consul.StatusError
	if _, err := app.Put(&consul.KVPair{Key: "other/x", Value: []byte("1")}, nil); !errors.As(err, &se) || se.Code != 403 {
		t.Errorf("Put(other/x) with the app token: got %v, want a 403", err)
	}
	if _, err := mgmt.KV().Put(&consul.KVPair{Key: "other/y", Value: []byte("2")}, nil); err != nil {
		t.Fatalf("Put(other/y) with the management token: %v", err)
	}
	if _, _, err := app.Get("other/y", nil); !errors.As(err, &se) || se.Code != 403 {
		t.Errorf("Get(other/y) with the app token: got %v, want a 403", err)
	}
	pairs, meta, err := app.List("", nil)
	if err != nil || len(pairs) != 1 || pairs[0].Key != "app/x" || !meta.ResultsFilteredByACLs {
		t.Errorf("List with the app token: got %d pairs (%v), filtered %v; want app/x only, filtered", len(pairs), err, meta != nil && meta.ResultsFilteredByACLs)
	}
	if _, err := app.DeleteTree("", nil); !errors.As(err, &se) || se.Code != 403 {
		t.Errorf("DeleteTree(\"\") with the app token: got %v, want a 403", err)
	}
}
