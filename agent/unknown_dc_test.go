package agent_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
)

// TestUnknownDatacenterIsAClientError: ?dc= naming a datacenter the WAN
// pool does not know is a 400 naming it, on a server and on a client
// agent (whose servers answer it over RPC), not a 503 inviting a retry.
func TestUnknownDatacenterIsAClientError(t *testing.T) {
	t.Parallel()
	c := agenttest.StartCluster(t, 1)
	client := agenttest.Start(t, agenttest.ClientConfig(t, "c1", c.GossipAddr(0)))
	for _, tc := range []struct {
		who  string
		addr string
	}{{"server", c.Agents[0].HTTPAddr().String()}, {"client", client.HTTPAddr().String()}} {
		for _, path := range []string{"/v1/catalog/services?dc=nope", "/v1/health/service/web?dc=nope", "/v1/kv/a?dc=nope"} {
			var resp *http.Response
			var body []byte
			// A client that has not found its server yet answers 503.
			waittest.For(t, 30*time.Second, tc.who+" reaching a server", func() error {
				var err error
				if resp, err = http.Get("http://" + tc.addr + path); err != nil {
					return err
				}
				body, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), "no server answered") {
					return fmt.Errorf("%s", body)
				}
				return nil
			})
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `unknown datacenter \"nope\"`) ||
				!strings.Contains(string(body), "No path to datacenter") {
				t.Errorf("%s %s: got %d %s, want a 400 naming the unknown datacenter", tc.who, path, resp.StatusCode, body)
			}
		}
	}
}
