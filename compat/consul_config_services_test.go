package compat_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/internal/waittest"
	consul "github.com/hashicorp/consul/api"
)

// TestConsulConfigServices: services in the config file, in Consul's
// shapes, are registered at start, replaced on reload (one gone, one
// changed), and removed at the next start once the file drops them; a
// service registered through the API is left alone throughout.
func TestConsulConfigServices(t *testing.T) {
	t.Parallel()
	base := agenttest.Config(t)
	base.Dev, base.Server = false, true
	base.DataDir = t.TempDir()
	path := filepath.Join(t.TempDir(), "services.json")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	load := func() (config.Config, error) {
		c := base
		return c, config.LoadFile(path, &c)
	}
	start := func() (*agent.Agent, *consul.Client) {
		t.Helper()
		cfg, err := load()
		if err != nil {
			t.Fatal(err)
		}
		a := agenttest.StartPrepared(t, cfg, func(a *agent.Agent) { a.SetReloading(agent.Reloading{Load: load}) })
		return a, consulClient(t, a.HTTPAddr().String())
	}
	expect := func(c *consul.Client, when string, want map[string]int) {
		t.Helper()
		waittest.For(t, 15*time.Second, when, func() error {
			svcs, err := c.Agent().Services()
			if err != nil {
				return err
			}
			got := map[string]int{}
			for id, s := range svcs {
				got[id] = s.Port
			}
			if !maps.Equal(got, want) {
				return fmt.Errorf("agent services: got %v, want %v", got, want)
			}
			names, _, err := c.Catalog().Services(nil)
			if err != nil {
				return err
			}
			delete(names, "cairn")
			if ids := slices.Sorted(maps.Keys(names)); !slices.Equal(ids, slices.Sorted(maps.Keys(want))) {
				return fmt.Errorf("catalog services: got %v, want %v", ids, slices.Sorted(maps.Keys(want)))
			}
			return nil
		})
	}

	write(`{"service": {"name": "redis", "port": 6379, "Meta": {"role": "cache"}, "check": {"ttl": "30s"}},
		"services": [{"name": "web", "port": 80}]}`)
	a, c := start()
	if err := c.Agent().ServiceRegister(&consul.AgentServiceRegistration{Name: "api", Port: 9000}); err != nil {
		t.Fatal(err)
	}
	expect(c, "the config file's services at start", map[string]int{"redis": 6379, "web": 80, "api": 9000})
	if checks, err := c.Agent().Checks(); err != nil || checks["service:redis"] == nil {
		t.Errorf("the config file's check: got %v, %v; want service:redis", checks, err)
	}

	write(`{"service": {"name": "redis", "port": 6380}}`)
	if err := c.Agent().Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	expect(c, "the services after a reload", map[string]int{"redis": 6380, "api": 9000})
	if checks, err := c.Agent().Checks(); err != nil || checks["service:redis"] != nil {
		t.Errorf("the check dropped from the file: got %v, %v; want it gone", checks, err)
	}

	write(`{"service": {"name": "redis", "port": "many"}}`)
	if err := c.Agent().Reload(); err == nil {
		t.Error("Reload of a bad service: got nil, want a 400")
	}
	expect(c, "the services after a refused reload", map[string]int{"redis": 6380, "api": 9000})

	write(``)
	agenttest.Stop(t, a)
	_, c = start()
	expect(c, "the services after a restart with an empty file", map[string]int{"api": 9000})
}
