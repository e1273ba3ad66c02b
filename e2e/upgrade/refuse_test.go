package upgrade

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/e2e/e2etest"
)

// alienProtocol is the cairn protocol version the deliberately
// incompatible peer speaks and accepts alone (CAIRN_TEST_PROTOCOL): far
// outside any range HEAD accepts.
const alienProtocol = 99

// TestIncompatiblePeerRefused starts a server on HEAD and, beside it, an
// agent of HEAD's binary made to speak only protocol alienProtocol, told
// to join it. The peer must be refused loudly, never half served: it is
// no alive member of the server's pool, the server lists it as
// incompatible with the reason, counts it in
// cairn_gossip_incompatible_total, and both sides log the refusal at
// ERROR naming both protocol versions.
func TestIncompatiblePeerRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agents as processes")
	}
	t.Parallel()
	head := release{name: "HEAD", bin: headBinary(t)}
	n := e2etest.NewLoopbackNet(t, "s1", "x1")
	work := t.TempDir()
	c := &cluster{t: t, net: n, http: &http.Client{Timeout: 3 * time.Second}}
	p := n.Ports
	var server, alien *agent
	for _, name := range n.Names {
		a := &agent{name: name, server: name == "s1", ip: n.IP[name],
			dataDir: filepath.Join(work, name), logPath: filepath.Join(work, name+".log")}
		a.args = []string{"agent", "-node", name, "-bind", a.ip, "-client", a.ip, "-data-dir", a.dataDir,
			"-dns-port", strconv.Itoa(p.DNS), "-http-port", strconv.Itoa(p.HTTP), "-server-port", strconv.Itoa(p.Server),
			"-serf-lan-port", strconv.Itoa(p.SerfLAN), "-serf-wan-port", strconv.Itoa(p.SerfWAN), "-retry-interval", "1s"}
		if a.server {
			a.args = append(a.args, "-server", "-bootstrap-expect", "1")
			server = a
		} else {
			a.args = append(a.args, "-retry-join", fmt.Sprintf("%s:%d", n.IP["s1"], p.SerfLAN))
			a.env = []string{"CAIRN_TEST_PROTOCOL=" + strconv.Itoa(alienProtocol)}
			alien = a
		}
		c.all = append(c.all, a)
	}
	c.servers = []*agent{server}
	t.Cleanup(func() {
		for _, a := range c.all {
			if a.running() {
				_ = a.cmd.Process.Kill()
				<-a.done
			}
		}
		if t.Failed() {
			for _, a := range c.all {
				t.Logf("last lines of %s's log:\n%s", a.name, logTail(a.logPath, 40))
			}
		}
	})
	c.start(server, head)
	if err := poll(60*time.Second, 200*time.Millisecond, func() error {
		_, err := c.leader()
		return err
	}); err != nil {
		t.Fatalf("the server has no leader: %v", err)
	}
	c.start(alien, head)

	// The refusal: listed as incompatible with its reason, counted, and
	// logged at ERROR on both sides with both protocol versions.
	refusal := regexp.MustCompile(`level=ERROR msg="refused a gossip peer of an incompatible protocol version[^"]*".*peer_protocol=(\d+).*protocol=(\d+)`)
	err := poll(60*time.Second, 500*time.Millisecond, func() error {
		var members []struct {
			Name   string
			Status int
			Tags   map[string]string
		}
		if err := c.get(server, "/v1/agent/members", &members); err != nil {
			return err
		}
		listed := false
		for _, m := range members {
			if m.Name != alien.name {
				continue
			}
			if m.Status == 1 {
				return fmt.Errorf("the server lists %s as alive: %+v", alien.name, m)
			}
			listed = m.Status == 5 && m.Tags["incompatible"] != ""
		}
		if !listed {
			return fmt.Errorf("the server does not list %s as incompatible (status 5, an incompatible tag): %+v", alien.name, members)
		}
		if got := incompatibleRefusals(c, server); got < 1 {
			return fmt.Errorf("cairn_gossip_incompatible_total is %v", got)
		}
		for _, a := range c.all {
			b, _ := os.ReadFile(a.logPath)
			m := refusal.FindStringSubmatch(string(b))
			if m == nil {
				return fmt.Errorf("%s has logged no refusal at ERROR", a.name)
			}
			if a == server && m[1] != strconv.Itoa(alienProtocol) || a == alien && m[2] != strconv.Itoa(alienProtocol) {
				return fmt.Errorf("%s's refusal does not name protocol %d: %s", a.name, alienProtocol, m[0])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Never half served: the alien agent has found no server to use.
	var leader string
	if err := c.get(alien, "/v1/status/leader", &leader); err == nil && leader != "" {
		t.Errorf("the refused agent names leader %q: it reached the servers", leader)
	}
}

// incompatibleRefusals sums cairn_gossip_incompatible_total over the
// agent's pools; -1 when it cannot be read.
func incompatibleRefusals(c *cluster, a *agent) float64 {
	resp, err := c.http.Get(c.httpURL(a) + "/v1/agent/metrics?format=prometheus")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return -1
	}
	var sum float64
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "cairn_gossip_incompatible_total") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}
