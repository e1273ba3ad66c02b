package consensus

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/rpc"
)

// TestBootstrapAfterInitialManagement: with an initial management token
// configured, a bootstrap asked before any leader duty ran is refused all
// the same (the endpoint makes that token, the bootstrap, first), naming
// the reset index; that index in the reset file allows one bootstrap,
// and the file goes.
func TestBootstrapAfterInitialManagement(t *testing.T) {
	const secret = "0b6f3a2e-5c1d-4e8f-9a7b-6c5d4e3f2a1b"
	dir := t.TempDir()
	h := startEndpointWith(t, true,
		func(c *Config) { c.InitialManagement, c.DataDir = secret, dir },
		func(c *CatalogConfig) { c.ACL.Enabled = true })
	if err := h.rpc.Register(rpc.ACLEndpoint, NewACL(h.cat)); err != nil {
		t.Fatal(err)
	}

	var boot rpc.ACLTokenResponse
	err := h.call(rpc.MethodACLBootstrap, &rpc.ACLBootstrapRequest{}, &boot)
	idx, ok := h.srv.Store().ACLBootstrapped()
	want := "ACL bootstrap no longer allowed (reset index: " + strconv.FormatUint(idx, 10) + ")"
	if !ok || !errors.Is(err, rpc.ErrPermissionDenied) || !strings.Contains(err.Error(), want) {
		t.Fatalf("bootstrap: got %v (bootstrapped %v), want permission denied: %s", err, ok, want)
	}
	if _, tok, _ := h.srv.Store().ACLToken(nil, acl.HashSecret(secret), true); tok == nil {
		t.Fatal("no initial management token")
	}

	file := filepath.Join(dir, BootstrapResetFile)
	if err := os.WriteFile(file, []byte(strconv.FormatUint(idx, 10)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.mustCall(t, rpc.MethodACLBootstrap, &rpc.ACLBootstrapRequest{}, &boot)
	if boot.Token.SecretID == "" {
		t.Fatal("the reset bootstrap answered no secret")
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("reset file after its use: got %v, want it removed", err)
	}
	if err := h.call(rpc.MethodACLBootstrap, &rpc.ACLBootstrapRequest{}, &boot); !errors.Is(err, rpc.ErrPermissionDenied) {
		t.Errorf("bootstrap after the reset one: got %v, want permission denied", err)
	}
}
