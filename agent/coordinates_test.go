package agent_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
)

type coordEntry struct {
	Node      string
	Segment   string
	Partition string
	Coord     struct {
		Vec                       []float64
		Error, Adjustment, Height float64
	}
}

// TestCoordinatesReachTheServers: a server and a client compute their
// coordinates from gossip and send them; both are readable from either
// agent, and the server's WAN coordinate is listed for its datacenter.
func TestCoordinatesReachTheServers(t *testing.T) {
	t.Parallel()
	scfg := agenttest.ServerConfig(t, "s1", 1)
	agenttest.FastCoordinates(&scfg)
	s1 := agenttest.Start(t, scfg)
	ccfg := agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(scfg))
	agenttest.FastCoordinates(&ccfg)
	c1 := agenttest.Start(t, ccfg)

	waittest.For(t, 15*time.Second, "both nodes' coordinates in the catalog", func() error {
		var got []coordEntry
		if err := getJSON(c1, "/v1/coordinate/nodes", &got); err != nil {
			return err
		}
		var nodes []string
		for _, e := range got {
			if len(e.Coord.Vec) != 8 || e.Coord.Height <= 0 {
				return fmt.Errorf("%s: coordinate %+v, want 8 dimensions and a height", e.Node, e.Coord)
			}
			nodes = append(nodes, e.Node)
		}
		if !slices.Equal(nodes, []string{"c1", "s1"}) {
			return fmt.Errorf("got coordinates of %v, want c1 and s1", nodes)
		}
		return nil
	})
	var one []coordEntry
	if err := getJSON(s1, "/v1/coordinate/node/c1", &one); err != nil || len(one) != 1 || one[0].Node != "c1" {
		t.Errorf("GET /v1/coordinate/node/c1: got %+v, %v; want c1's", one, err)
	}
	if code, _ := call(t, s1, "", http.MethodGet, "/v1/coordinate/node/nobody", nil); code != http.StatusNotFound {
		t.Errorf("GET /v1/coordinate/node/nobody: got %d, want 404", code)
	}
	var dcs []struct {
		Datacenter  string
		AreaID      string
		Coordinates []coordEntry
	}
	if err := getJSON(c1, "/v1/coordinate/datacenters", &dcs); err != nil {
		t.Fatal(err)
	}
	if len(dcs) != 1 || dcs[0].Datacenter != "dc1" || dcs[0].AreaID != "wan" ||
		len(dcs[0].Coordinates) != 1 || dcs[0].Coordinates[0].Node != "s1" {
		t.Errorf("GET /v1/coordinate/datacenters: got %+v, want dc1 with s1", dcs)
	}
}

// nearAgent starts a dev agent that computes no coordinate of its own (so
// the ones the test sets stay), with web on itself and on n1..n4 at
// 10.0.0.1..4, and coordinates that put test, n2, n3, n1 at 0, 10, 20 and
// 30ms along one axis; n4 has none.
func nearAgent(t *testing.T, prepare func(*agent.Agent)) *agent.Agent {
	t.Helper()
	cfg := agenttest.Config(t)
	cfg.Coordinates.Disable = true
	cfg.Coordinates.UpdatePeriod = 20 * time.Millisecond
	a := agenttest.StartPrepared(t, cfg, prepare)
	put(t, a, "/v1/agent/service/register", `{"ID": "web", "Name": "web", "Port": 80}`)
	for i := 1; i <= 4; i++ {
		put(t, a, "/v1/catalog/register", fmt.Sprintf(
			`{"Node": "n%d", "Address": "10.0.0.%d", "Service": {"ID": "web", "Service": "web", "Port": 80}}`, i, i))
	}
	for node, x := range map[string]float64{"test": 0, "n1": 0.030, "n2": 0.010, "n3": 0.020} {
		setCoordinate(t, a, node, x)
	}
	waittest.For(t, 10*time.Second, "four coordinates", func() error {
		var got []coordEntry
		if err := getJSON(a, "/v1/coordinate/nodes", &got); err != nil {
			return err
		}
		if len(got) != 4 {
			return fmt.Errorf("got %d coordinates, want 4", len(got))
		}
		return nil
	})
	return a
}

func setCoordinate(t *testing.T, a *agent.Agent, node string, x float64) {
	t.Helper()
	put(t, a, "/v1/coordinate/update", fmt.Sprintf(
		`{"Node": %q, "Coord": {"Vec": [%g, 0, 0, 0, 0, 0, 0, 0], "Error": 0.2, "Adjustment": 0, "Height": 0.00001}}`, node, x))
}

func TestNearSortsHTTPReads(t *testing.T) {
	t.Parallel()
	a := nearAgent(t, func(*agent.Agent) {})
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/v1/health/service/web?near=_agent", []string{"test", "n2", "n3", "n1", "n4"}},
		{"/v1/health/service/web?near=n1", []string{"n1", "n3", "n2", "test", "n4"}},
		{"/v1/catalog/service/web?near=_agent", []string{"test", "n2", "n3", "n1", "n4"}},
		{"/v1/catalog/service/web?near=n1&cached", []string{"n1", "n3", "n2", "test", "n4"}},
		{"/v1/catalog/nodes?near=_agent", []string{"test", "n2", "n3", "n1", "n4"}},
		{"/v1/catalog/nodes", []string{"n1", "n2", "n3", "n4", "test"}},
		{"/v1/catalog/nodes?near=n4", []string{"n1", "n2", "n3", "n4", "test"}}, // no coordinate: as it was
	} {
		var got []string
		var err error
		if tc.path[:10] == "/v1/health" {
			var entries []struct{ Node struct{ Node string } }
			err = getJSON(a, tc.path, &entries)
			for _, e := range entries {
				got = append(got, e.Node.Node)
			}
		} else {
			var entries []struct{ Node string }
			err = getJSON(a, tc.path, &entries)
			for _, e := range entries {
				got = append(got, e.Node)
			}
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("GET %s: got %v, %v; want %v", tc.path, got, err, tc.want)
		}
	}
}

// TestNearDNS: web.service.near.cluster answers nearest first, the same
// order every time, and follows a coordinate that moves.
func TestNearDNS(t *testing.T) {
	t.Parallel()
	a := nearAgent(t, func(a *agent.Agent) { agent.SetNearRefresh(a, 100*time.Millisecond) })
	answer := func(name string, qtype uint16) ([]string, error) {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, a.DNSAddr().String())
		if err != nil {
			return nil, err
		}
		var out []string
		for _, rr := range r.Answer {
			switch rr := rr.(type) {
			case *dns.A:
				out = append(out, rr.A.String())
			case *dns.SRV:
				out = append(out, rr.Target)
			}
		}
		return out, nil
	}
	want := []string{"127.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.1", "10.0.0.4"}
	for range 5 {
		got, err := answer("web.service.near.cluster.", dns.TypeA)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("A web.service.near.cluster: got %v, %v; want %v", got, err, want)
		}
	}
	got, err := answer("_web._tcp.service.near.cluster.", dns.TypeSRV)
	wantSRV := []string{"test.node.near.cluster.", "n2.node.near.cluster.", "n3.node.near.cluster.", "n1.node.near.cluster.", "n4.node.near.cluster."}
	if err != nil || !slices.Equal(got, wantSRV) {
		t.Errorf("SRV _web._tcp.service.near.cluster: got %v, %v; want %v", got, err, wantSRV)
	}
	if got, err := answer("n2.node.near.cluster.", dns.TypeA); err != nil || !slices.Equal(got, []string{"10.0.0.2"}) {
		t.Errorf("A n2.node.near.cluster (an SRV target): got %v, %v; want 10.0.0.2", got, err)
	}

	// A prepared query with Near "_agent" is answered in that order too.
	code, body := call(t, a, "", http.MethodPost, "/v1/query", map[string]any{
		"Name": "web-near", "Service": map[string]any{"Service": "web", "Near": "_agent"}})
	if code != http.StatusOK {
		t.Fatalf("POST /v1/query: %d %s", code, body)
	}
	for range 3 {
		if got, err := answer("web-near.query.cluster.", dns.TypeA); err != nil || !slices.Equal(got, want) {
			t.Errorf("A web-near.query.cluster: got %v, %v; want %v", got, err, want)
		}
	}

	// n1 moves next to the agent: the entry is sorted again, though the
	// change feed says nothing of coordinates.
	setCoordinate(t, a, "n1", 0.001)
	want = []string{"127.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}
	waittest.For(t, 10*time.Second, "n1 second in the near answer", func() error {
		got, err := answer("web.service.near.cluster.", dns.TypeA)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("got %v, want %v", got, want)
		}
		return nil
	})
}
