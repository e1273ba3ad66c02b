package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// TestUserEventsAndForceLeaveRefuseAnAttacker: on a secured server, a
// token with event:write on "deploy" only fires deploy; an event of
// another name is refused by the agent and, sent straight to the RPC
// port, by the server, and no agent keeps it; the list shows only what
// the token may read (event:read); force-leave needs operator:write.
func TestUserEventsAndForceLeaveRefuseAnAttacker(t *testing.T) {
	t.Parallel()
	cfg := aclServerConfig(t, "ev1")
	a := agenttest.Start(t, cfg)
	waitManagement(t, a)
	deployer := makeToken(t, a, "deployer", `event "deploy" { policy = "write" }`)

	if code, b := call(t, a, deployer, "PUT", "/v1/event/fire/deploy", nil); code != http.StatusOK {
		t.Fatalf("fire deploy: got %d %s, want 200", code, b)
	}
	if code, b := call(t, a, deployer, "PUT", "/v1/event/fire/secret", nil); code != http.StatusForbidden {
		t.Errorf("fire secret as deployer: got %d %s, want 403", code, b)
	}
	pool := rpctest.NewPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := &rpc.EventFireRequest{WriteRequest: rpc.WriteRequest{Token: deployer},
		Event: rpc.UserEvent{ID: "6e1b2f1c-0d1a-4c1e-9a1b-2c3d4e5f6a7b", Name: "secret"}}
	if err := pool.Call(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Ports.Server)), rpc.MethodEventFire, args, nil); !errors.Is(err, rpc.ErrPermissionDenied) {
		t.Errorf("Event.Fire secret as deployer on the RPC port: got %v, want permission denied", err)
	}
	for _, tok := range []string{"", deployer} {
		if code, b := call(t, a, tok, "PUT", "/v1/agent/force-leave/ev1", nil); code != http.StatusForbidden {
			t.Errorf("force-leave as %q: got %d %s, want 403", tok, code, b)
		}
	}

	waittest.For(t, aclTestWait, "the deploy event kept", func() error {
		var evs []struct{ Name string }
		mustCall(t, a, mgmtSecret, "GET", "/v1/event/list", nil, &evs)
		if len(evs) != 1 || evs[0].Name != "deploy" {
			return fmt.Errorf("got %+v, want the deploy event only", evs)
		}
		return nil
	})
	reader := makeToken(t, a, "reader", `event "other" { policy = "read" }`)
	var evs []struct{ Name string }
	mustCall(t, a, reader, "GET", "/v1/event/list", nil, &evs)
	if len(evs) != 0 {
		t.Errorf("list as a reader of other events: got %+v, want none", evs)
	}
	mustCall(t, a, deployer, "GET", "/v1/event/list", nil, &evs)
	if len(evs) != 1 {
		t.Errorf("list as deployer (event:write on deploy): got %+v, want the deploy event", evs)
	}
}
