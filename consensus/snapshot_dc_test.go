package consensus

import (
	"errors"
	"testing"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// TestSnapshotRestoreIsAuthorizedByItsDatacenter: a restore into dc2 sent
// to a dc1 server is authorized by dc2's servers, with dc2's tokens, and
// before anything reads the archive (bytes that are not one: read first,
// they would be a 400 naming snapshot, not a 403). Authorize goes where a
// restore would.
func TestSnapshotRestoreIsAuthorizedByItsDatacenter(t *testing.T) {
	r := newTestRouter(t, "dc1")
	acl := ACLConfig{Enabled: true}
	dc2 := startEndpoint(t, true, func(c *CatalogConfig) { c.Datacenter, c.ACL = "dc2", acl })
	dc1 := startEndpoint(t, true, func(c *CatalogConfig) { c.Router, c.ACL = r, acl })
	r.Update([]gossip.Member{wanMember("s1", "dc2", dc2.addr, gossip.StatusAlive)})
	for _, h := range []*endpointHarness{dc1, dc2} {
		if err := h.rpc.Register(rpc.SnapshotEndpoint, NewSnapshot(h.cat)); err != nil {
			t.Fatal(err)
		}
		if err := h.rpc.Register(rpc.ACLEndpoint, NewACL(h.cat)); err != nil {
			t.Fatal(err)
		}
	}
	var boot rpc.ACLTokenResponse // a management token of dc2 only
	dc2.mustCall(t, rpc.MethodACLBootstrap, &rpc.ACLBootstrapRequest{}, &boot)
	mgmt2 := boot.Token.SecretID

	authorize := func(dc, token string) error {
		return dc1.call(rpc.MethodSnapshotAuthorize, &rpc.SnapshotAuthorizeRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, Token: token}}, &struct{}{})
	}
	if err := authorize("dc2", mgmt2); err != nil {
		t.Errorf("authorize dc2's management token for dc2 through dc1: %v", err)
	}
	if err := authorize("", mgmt2); !errors.Is(err, rpc.ErrACLNotFound) {
		t.Errorf("authorize dc2's management token for dc1: got %v, want ACL not found", err)
	}
	if err := authorize("dc2", ""); !errors.Is(err, rpc.ErrPermissionDenied) {
		t.Errorf("authorize no token for dc2: got %v, want permission denied", err)
	}

	notAnArchive := []byte("not a gzip'ed tar")
	for _, tok := range []string{"", mgmt2} {
		err := dc1.call(rpc.MethodSnapshotRestore, &rpc.SnapshotRestoreRequest{
			WriteRequest: rpc.WriteRequest{Datacenter: "dc2", Token: tok}, Archive: notAnArchive}, &rpc.SnapshotRestoreResponse{})
		fe, isField := errors.AsType[*catalog.FieldError](err)
		switch {
		case tok == "" && !errors.Is(err, rpc.ErrPermissionDenied):
			t.Errorf("restore into dc2 with no token: got %v, want permission denied", err)
		case tok != "" && (!isField || fe.Field != "snapshot"):
			t.Errorf("restore of bytes that are no archive into dc2 with its management token: got %v, want a 400 naming snapshot", err)
		}
	}
	if n := dc1.srv.SnapshotInflatedBytes(); n != 0 {
		t.Errorf("dc1 inflated %d bytes of a restore into dc2, want none", n)
	}
}
