package agent_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/tlsutil/tlsutiltest"
)

// secureGossipKey is the gossip key of the secured clusters of these tests.
const secureGossipKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// secured makes cfg an agent of a cluster run as docs/operating/security.md
// says: a gossip key, mutual TLS on the server port with
// certificates of ca, ACLs on with default deny, and the management
// secret as the agent token (initial_management on servers).
func secured(t *testing.T, cfg config.Config, ca *tlsutiltest.CA) config.Config {
	cfg.EncryptKey = secureGossipKey
	cfg.TLS.RPC = ca.Config(t, cfg.Server, cfg.Datacenter)
	cfg.ACL.Enabled = true
	cfg.ACL.DefaultPolicy = "deny"
	cfg.ACL.Tokens.Agent = mgmtSecret
	if cfg.Server {
		cfg.ACL.Tokens.InitialManagement = mgmtSecret
	}
	return cfg
}

// attackerClient is an HTTP client whose connections come from
// attackerIP, with no token.
func attackerClient() *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(attackerIP)}, Timeout: 2 * time.Second}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

var resetIndexRE = regexp.MustCompile(`ACL bootstrap no longer allowed \(reset index: (\d+)\)`)

// TestAnonymousBootstrapNeverWinsAgainstInitialManagement plays a caller
// with no token who asks a server and a client agent of a secured cluster
// for the ACL bootstrap, from before the agents start until well after
// the initial management token exists. Creating that token is the
// bootstrap: no ask ever gets a token, and once the cluster is up every
// refusal names the reset index.
func TestAnonymousBootstrapNeverWinsAgainstInitialManagement(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	scfg := secured(t, agenttest.ServerConfig(t, "s1", 1), ca)
	ccfg := secured(t, agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(scfg)), ca)
	// HTTP ports known before the agents start, so the attack starts first.
	scfg.Ports.HTTP, ccfg.Ports.HTTP = agenttest.FreePort(t), agenttest.FreePort(t)

	hc := attackerClient()
	ctx, stop := context.WithCancel(context.Background())
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		won      []string
		refusals [2]atomic.Int64 // after the management token exists, with the reset index
		tokenUp  atomic.Bool
	)
	for i, port := range []int{scfg.Ports.HTTP, ccfg.Ports.HTTP} {
		url := fmt.Sprintf("http://127.0.0.1:%d/v1/acl/bootstrap", port)
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPut, url, nil)
				resp, err := hc.Do(req)
				if err != nil {
					time.Sleep(5 * time.Millisecond) // not up yet: pace the retries
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusOK:
					mu.Lock()
					won = append(won, fmt.Sprintf("port %d: %s", port, body))
					mu.Unlock()
				case resp.StatusCode == http.StatusForbidden && resetIndexRE.Match(body) && tokenUp.Load():
					refusals[i].Add(1)
				}
			}
		})
	}
	t.Cleanup(func() { stop(); wg.Wait() }) // the attack ends with the test, whatever fails
	s := agenttest.Start(t, scfg)
	agenttest.Start(t, ccfg)
	waitManagement(t, s)
	tokenUp.Store(true)
	waittest.For(t, aclTestWait, "refusals naming the reset index from the server and the client", func() error {
		mu.Lock()
		lost := len(won) > 0
		mu.Unlock()
		if a, b := refusals[0].Load(), refusals[1].Load(); !lost && (a < 50 || b < 50) {
			return fmt.Errorf("server %d, client %d", a, b)
		}
		return nil
	})
	stop()
	wg.Wait()
	if len(won) > 0 {
		t.Fatalf("an anonymous bootstrap got a management token: %v", won)
	}
	// The cluster is the operator's: the initial management token works.
	mustCall(t, s, mgmtSecret, "GET", "/v1/acl/tokens", nil, nil)
}

// TestACLBootstrapReset follows Consul's reset procedure: the refusal
// names the reset index; written into acl-bootstrap-reset in the
// leader's data dir, it allows one bootstrap, once; a wrong index is
// refused and names both.
func TestACLBootstrapReset(t *testing.T) {
	t.Parallel()
	cfg := aclServerConfig(t, "s1")
	s := agenttest.Start(t, cfg)
	waitManagement(t, s)
	resetIndex := func() uint64 {
		t.Helper()
		code, body := call(t, s, "", "PUT", "/v1/acl/bootstrap", nil)
		m := resetIndexRE.FindSubmatch(body)
		if code != http.StatusForbidden || m == nil {
			t.Fatalf("bootstrap: got %d %s, want 403 naming the reset index", code, body)
		}
		n, _ := strconv.ParseUint(string(m[1]), 10, 64)
		return n
	}
	first := resetIndex()
	file := filepath.Join(cfg.DataDir, consensus.BootstrapResetFile)

	if err := os.WriteFile(file, fmt.Appendf(nil, "%d\n", first+1), 0o600); err != nil {
		t.Fatal(err)
	}
	code, body := call(t, s, "", "PUT", "/v1/acl/bootstrap", nil)
	want := fmt.Sprintf("specified %d, reset index: %d", first+1, first)
	if code != http.StatusForbidden || !strings.Contains(string(body), want) {
		t.Fatalf("bootstrap with a wrong reset index: got %d %s, want 403 naming %q", code, body, want)
	}

	if err := os.WriteFile(file, fmt.Appendf(nil, "%d\n", first), 0o600); err != nil {
		t.Fatal(err)
	}
	var tok struct{ SecretID string }
	mustCall(t, s, "", "PUT", "/v1/acl/bootstrap", nil, &tok)
	if tok.SecretID == "" {
		t.Fatal("the reset bootstrap answered no SecretID")
	}
	mustCall(t, s, tok.SecretID, "GET", "/v1/acl/tokens", nil, nil)
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("reset file after its use: got %v, want it removed", err)
	}
	if again := resetIndex(); again <= first {
		t.Fatalf("reset index after the reset: got %d, want more than %d", again, first)
	}
	mustCall(t, s, mgmtSecret, "GET", "/v1/acl/tokens", nil, nil)
}
