package agent_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
)

// TestAgentTokenAPI: PUT /v1/agent/token/<kind> needs acl:write (an
// attacker's token or none is refused and changes nothing); set by a
// management token, the default token serves requests that carry none
// from then on; an unknown kind is a 404.
func TestAgentTokenAPI(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, aclServerConfig(t, "tok1"))
	waitManagement(t, a)
	mustCall(t, a, mgmtSecret, "PUT", "/v1/kv/open/k", "v", nil)
	reader := makeToken(t, a, "kv-reader", `key_prefix "open/" { policy = "read" }`)
	aclReader := makeToken(t, a, "acl-reader", `acl = "read"`)

	for _, tok := range []string{"", reader, aclReader} {
		if code, b := call(t, a, tok, "PUT", "/v1/agent/token/default", map[string]string{"Token": reader}); code != http.StatusForbidden {
			t.Errorf("set default token as %q: got %d %s, want 403", tok, code, b)
		}
	}
	if code, _ := call(t, a, "", "GET", "/v1/kv/open/k", nil); code != http.StatusForbidden {
		t.Fatalf("anonymous read after refused sets: got %d, want 403 (the default token unchanged)", code)
	}

	mustCall(t, a, mgmtSecret, "PUT", "/v1/agent/token/acl_token", map[string]string{"Token": reader}, nil)
	waittest.For(t, aclTestWait, "a request without a token read with the new default token", func() error {
		if code, b := call(t, a, "", "GET", "/v1/kv/open/k", nil); code != http.StatusOK {
			return fmt.Errorf("got %d %s", code, b)
		}
		return nil
	})
	if code, b := call(t, a, mgmtSecret, "PUT", "/v1/agent/token/nope", map[string]string{"Token": "x"}); code != http.StatusNotFound {
		t.Errorf("unknown kind: got %d %s, want 404", code, b)
	}
}
