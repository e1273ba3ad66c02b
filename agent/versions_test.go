package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
	"github.com/cairndns/cairn/internal/buildinfo"
	"github.com/cairndns/cairn/internal/waittest"
)

// TestIncompatiblePeerShowsInMembersAndMetrics: an agent of a protocol
// outside this one's range tries to join a server; it is refused (the
// join fails), /v1/agent/members lists it with status "incompatible"
// (cairn's 5) and its build, never as alive, and the metrics count it.
// The ERROR line naming both versions is gossip's
// TestIncompatiblePeerIsRefusedLoudly.
func TestIncompatiblePeerShowsInMembersAndMetrics(t *testing.T) {
	t.Parallel()
	cfg := agenttest.ServerConfig(t, "s1", 1)
	a := agenttest.Start(t, cfg)
	pc := gossiptest.LANConfig("future", "dc1", gossip.RoleClient)
	v := buildinfo.ProtocolMax + 2
	pc.Build, pc.ProtocolVersion, pc.ProtocolMin, pc.ProtocolMax = "9.0.0:ffffffff", v, v, v
	future := gossiptest.Start(t, pc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n, err := future.Join(ctx, []string{agenttest.GossipAddr(cfg)}); err == nil {
		t.Errorf("join of a peer of protocol %d: got %d joined, no error; want it refused", v, n)
	}
	c := client(t, a)
	waittest.For(t, 20*time.Second, "the refused peer listed", func() error {
		members, err := c.Agent().Members(ctx)
		if err != nil {
			return err
		}
		for _, m := range members {
			if m.Name != "future" {
				continue
			}
			if m.Status != api.MemberIncompatible || m.Tags["build"] != pc.Build || m.Tags["vsn"] != fmt.Sprint(v) || m.Tags["incompatible"] == "" {
				return fmt.Errorf("got %+v, want status incompatible with its build, vsn and why", m)
			}
			return nil
		}
		return fmt.Errorf("future not listed in %+v", members)
	})
	body, _ := get(t, a, "/v1/agent/metrics?format=prometheus")
	samples, err := parsePrometheus(body)
	if err != nil {
		t.Fatal(err)
	}
	if n := samples[`cairn_gossip_incompatible_total{pool="lan"}`]; n < 1 {
		t.Errorf("cairn_gossip_incompatible_total{pool=\"lan\"}: got %v, want at least 1", n)
	}
	if n := samples[`cairn_gossip_members{pool="lan",status="incompatible"}`]; n != 1 {
		t.Errorf("cairn_gossip_members{status=\"incompatible\"}: got %v, want 1", n)
	}
	info := fmt.Sprintf(`cairn_build_info{goversion=%q,protocol="%d",protocol_max="%d",protocol_min="%d",revision=%q,version=%q}`,
		buildinfo.Read().GoVersion, buildinfo.Protocol, buildinfo.ProtocolMax, buildinfo.ProtocolMin, buildinfo.Revision(), buildinfo.Version())
	if samples[info] != 1 {
		t.Errorf("%s: got %v, want 1", info, samples[info])
	}
}

// TestSelfShowsVersions: /v1/agent/self has Consul's Config.Version,
// Revision and BuildDate, and cairn's protocol versions; the agent's own
// member tags carry its build and protocol range.
func TestSelfShowsVersions(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	body, _ := get(t, a, "/v1/agent/self")
	var self struct {
		Config struct {
			Version, Revision, BuildDate              string
			ProtocolVersion, ProtocolMin, ProtocolMax uint8
		}
		Member struct{ Tags map[string]string }
	}
	if err := json.Unmarshal([]byte(body), &self); err != nil {
		t.Fatal(err)
	}
	cfg := self.Config
	if cfg.Version != buildinfo.Version() || cfg.Revision != buildinfo.Revision() || cfg.BuildDate != buildinfo.BuildDate() ||
		cfg.ProtocolVersion != buildinfo.Protocol || cfg.ProtocolMin != buildinfo.ProtocolMin || cfg.ProtocolMax != buildinfo.ProtocolMax {
		t.Errorf("Config: got %+v, want version %s, revision %s, protocol %d (%d–%d)", cfg, buildinfo.Version(), buildinfo.Revision(),
			buildinfo.Protocol, buildinfo.ProtocolMin, buildinfo.ProtocolMax)
	}
	tags := self.Member.Tags
	if tags["build"] != buildinfo.Build() || tags["vsn"] != fmt.Sprint(buildinfo.Protocol) ||
		tags["vsn_min"] != fmt.Sprint(buildinfo.ProtocolMin) || tags["vsn_max"] != fmt.Sprint(buildinfo.ProtocolMax) {
		t.Errorf("Member.Tags: got %v, want build %s and vsn %d (%d–%d)", tags, buildinfo.Build(), buildinfo.Protocol, buildinfo.ProtocolMin, buildinfo.ProtocolMax)
	}
}
