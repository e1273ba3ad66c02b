package compat_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	consul "github.com/hashicorp/consul/api"
)

// newDevClient starts a dev agent (a server of one) and returns Consul's
// client for it once it has a leader.
func newDevClient(t *testing.T) *consul.Client {
	t.Helper()
	a := agenttest.Start(t, agenttest.Config(t))
	c, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	waittest.For(t, 30*time.Second, "a leader", func() error {
		l, err := c.Status().Leader()
		if err != nil {
			return err
		}
		if l == "" {
			return fmt.Errorf("no leader yet")
		}
		return nil
	})
	return c
}

// TestConsulClientAutopilotPartialConfig sets the configuration Terraform
// and Consul's own tests send when they set one field: the rest zero
// (consul/api sends absent durations as null). Consul stores it as sent,
// zeros included, and so does cairn; the only server, the leader, stays
// healthy under a zero LastContactThreshold.
func TestConsulClientAutopilotPartialConfig(t *testing.T) {
	t.Parallel()
	c := newDevClient(t)
	op := c.Operator()
	before, err := op.AutopilotGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !before.CleanupDeadServers {
		t.Fatalf("default configuration %+v, want CleanupDeadServers", before)
	}
	if err := op.AutopilotSetConfiguration(&consul.AutopilotConfiguration{CleanupDeadServers: false}, nil); err != nil {
		t.Fatalf("set {CleanupDeadServers: false}: %v, want it taken as Consul takes it", err)
	}
	got, err := op.AutopilotGetConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.CleanupDeadServers || got.LastContactThreshold.Duration() != 0 || got.ServerStabilizationTime.Duration() != 0 || got.MaxTrailingLogs != 0 {
		t.Errorf("after a partial set: got %+v (%s, %s), want every field as sent: false and zeros", got, got.LastContactThreshold, got.ServerStabilizationTime)
	}
	ok, err := op.AutopilotCASConfiguration(&consul.AutopilotConfiguration{CleanupDeadServers: true, ModifyIndex: got.ModifyIndex}, nil)
	if err != nil || !ok {
		t.Fatalf("partial CAS at the current index: %v, %v; want updated", ok, err)
	}
	waittest.For(t, 30*time.Second, "the leader healthy under a zero LastContactThreshold", func() error {
		h, err := op.AutopilotServerHealth(nil)
		if err != nil {
			return err
		}
		if !h.Healthy || len(h.Servers) != 1 || !h.Servers[0].Healthy {
			return fmt.Errorf("health %+v, want the one server healthy", h)
		}
		return nil
	})
}

// TestConsulClientServerServiceName: with server_service_name "consul" the
// servers are found as Consul's are, by the catalog, by health (passing)
// and in the list of services, where "cairn" no longer is.
func TestConsulClientServerServiceName(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.ServerServiceName = "consul"
	a := agenttest.Start(t, cfg)
	c, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	waittest.For(t, 30*time.Second, "the servers as service consul", func() error {
		svcs, meta, err := c.Catalog().Service("consul", "", nil)
		if err != nil {
			return err
		}
		if len(svcs) != 1 || meta.LastIndex == 0 || svcs[0].Datacenter != "dc1" || svcs[0].ServicePort == 0 {
			return fmt.Errorf("catalog service consul: %d instances (index %d), want the server on its RPC port", len(svcs), meta.LastIndex)
		}
		entries, _, err := c.Health().Service("consul", "", true, nil)
		if err != nil {
			return err
		}
		if len(entries) != 1 {
			return fmt.Errorf("passing instances of consul: got %d, want 1", len(entries))
		}
		names, _, err := c.Catalog().Services(nil)
		if err != nil {
			return err
		}
		if _, ok := names["consul"]; !ok {
			return fmt.Errorf("services %v: want consul", names)
		}
		if _, ok := names["cairn"]; ok {
			return fmt.Errorf("services %v: want no cairn", names)
		}
		return nil
	})
}
