package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/waittest"
)

// externalNodes registers nodes that no agent runs on, so neither the
// leader's reconcile nor anti-entropy touches them.
func externalNodes(t *testing.T, a *agent.Agent, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, req := range []*catalog.RegisterRequest{
		{Node: prefix + "-1", Address: "10.1.0.1", NodeMeta: map[string]string{"rack": "r1"},
			Service: &catalog.Service{ID: "web-1", Service: "web", Tags: []string{"v1"}, Port: 8080, Weights: catalog.DefaultWeights},
			Checks:  []*catalog.Check{{CheckID: "web-http", Name: "web", Status: catalog.HealthWarning, Output: "slow", ServiceID: "web-1", Type: "http"}}},
		{Node: prefix + "-2", Address: "10.1.0.2",
			Service: &catalog.Service{ID: "db", Service: "db", Port: 5432, Weights: catalog.DefaultWeights},
			Checks:  []*catalog.Check{{CheckID: "disk", Name: "disk", Status: catalog.HealthPassing, Type: "script"}}},
	} {
		if err := agent.RegisterInCatalog(ctx, a, req); err != nil {
			t.Fatalf("register %s: %v", req.Node, err)
		}
	}
}

// catalogView is what the test compares between clusters: the instances of
// web and db with their checks, as the HTTP API returns them.
type catalogView struct {
	Catalog map[string][]*api.CatalogService
	Health  map[string][]*api.ServiceEntry
}

func viewOf(c *api.Client) (*catalogView, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v := &catalogView{Catalog: map[string][]*api.CatalogService{}, Health: map[string][]*api.ServiceEntry{}}
	for _, svc := range []string{"web", "db"} {
		cs, _, err := c.Catalog().Service(ctx, svc, "")
		if err != nil {
			return nil, err
		}
		hs, _, err := c.Health().Service(ctx, svc, "", false)
		if err != nil {
			return nil, err
		}
		v.Catalog[svc], v.Health[svc] = cs, hs
	}
	return v, nil
}

func nodeNames(t *testing.T, c *api.Client) []string {
	t.Helper()
	nodes, _, err := c.Catalog().Nodes(context.Background())
	if err != nil {
		t.Fatalf("catalog nodes: %v", err)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Node)
	}
	slices.Sort(names)
	return names
}

// TestSnapshotSaveRestoreBetweenClusters saves the catalog of a one-server
// datacenter over HTTP, restores it over HTTP into a fresh three-server
// cluster (each server with Raft on disk), and finds the same catalog on
// every server of it; a corrupted archive is refused first, changing
// nothing. The restored cluster's leader then puts its own servers back in
// the catalog.
func TestSnapshotSaveRestoreBetweenClusters(t *testing.T) {
	t.Parallel()
	// A server of a datacenter of one (expecting 1), Raft on disk.
	src := agenttest.StartConfigs(t, []config.Config{agenttest.ServerConfig(t, "a1", 1)})
	leaderOf(t, src, []int{0}, 1)
	externalNodes(t, src.Agents[0], "ext")
	srcAPI := apiClient(t, src.Agents[0])
	want, err := viewOf(srcAPI)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Catalog["web"]) != 1 || len(want.Health["db"]) != 1 {
		t.Fatalf("source catalog %+v lacks the fixture", want)
	}

	ctx := context.Background()
	rc, meta, err := srcAPI.Snapshot().Save(ctx)
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	archive, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatalf("read the archive: %v", err)
	}
	sm, err := api.VerifySnapshot(bytes.NewReader(archive))
	if err != nil {
		t.Fatalf("VerifySnapshot: %v", err)
	}
	if meta.LastIndex == 0 || sm.Index != meta.LastIndex || sm.Datacenter != "dc1" || sm.Nodes != 3 || sm.Services != 3 {
		t.Errorf("got X-Consul-Index %d and meta %+v, want the index, dc1, 3 nodes (a1, ext-1, ext-2) and 3 services (web, db, a1's cairn)",
			meta.LastIndex, sm)
	}

	dst := agenttest.StartCluster(t, 3)
	leaderOf(t, dst, []int{0, 1, 2}, 3)
	externalNodes(t, dst.Agents[0], "own")
	via := apiClient(t, dst.Agents[1])
	waittest.For(t, 10*time.Second, "own nodes", func() error {
		if names := nodeNames(t, via); !slices.Contains(names, "own-1") {
			return fmt.Errorf("nodes %v", names)
		}
		return nil
	})

	bad := bytes.Clone(archive)
	bad[len(bad)/2] ^= 0x10
	err = via.Snapshot().Restore(ctx, bytes.NewReader(bad))
	var se *api.StatusError
	if !errors.As(err, &se) || se.Code != 400 || se.Field != "snapshot" {
		t.Fatalf("restore of a corrupted archive: got %v, want a 400 naming snapshot", err)
	}
	if names := nodeNames(t, via); !slices.Contains(names, "own-1") || slices.Contains(names, "ext-1") {
		t.Fatalf("after a refused restore the nodes are %v, want them unchanged", names)
	}

	if err := via.Snapshot().Restore(ctx, bytes.NewReader(archive)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	for i, a := range dst.Agents { // each server answers from its own store
		c := apiClient(t, a)
		waittest.For(t, 10*time.Second, fmt.Sprintf("restored catalog on s%d", i+1), func() error {
			got, err := viewOf(c)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got, want) {
				return fmt.Errorf("got %s, want %s", dumpView(got), dumpView(want))
			}
			return nil
		})
	}
	// The leader reconciles its members into the restored catalog at once
	// (its interval is a minute): each server's node with its gossip check,
	// and a1, a server of the source cluster that this one's gossip never
	// knew, reaped.
	waittest.For(t, 10*time.Second, "the restored cluster's own members", func() error {
		names := nodeNames(t, via)
		if want := []string{"ext-1", "ext-2", "s1", "s2", "s3"}; !reflect.DeepEqual(names, want) {
			return fmt.Errorf("got nodes %v, want %v", names, want)
		}
		for _, n := range []string{"s1", "s2", "s3"} {
			checks, _, err := via.Health().Node(ctx, n)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(checks, func(c *api.HealthCheck) bool { return c.CheckID == "serfHealth" }) {
				return fmt.Errorf("%s has no gossip check: %+v", n, checks)
			}
		}
		return nil
	})
}

func dumpView(v *catalogView) string {
	var b bytes.Buffer
	for svc, list := range v.Catalog {
		for _, s := range list {
			fmt.Fprintf(&b, "catalog %s %+v; ", svc, *s)
		}
	}
	for svc, list := range v.Health {
		for _, e := range list {
			fmt.Fprintf(&b, "health %s node %+v service %+v", svc, *e.Node, *e.Service)
			for _, c := range e.Checks {
				fmt.Fprintf(&b, " check %+v", *c)
			}
			b.WriteString("; ")
		}
	}
	return b.String()
}
