package local_test

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// TestARefusalChangesNothing: a change the servers refuse leaves the
// agent, and its data dir, as it was; one they cannot be reached for is
// kept, for anti-entropy.
func TestARefusalChangesNothing(t *testing.T) {
	dir := t.TempDir()
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(dir), cat)
	ctx := context.Background()
	mustAdd(t, st, svc("web", "web", 80))
	files := func() []string {
		got, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	before := files()

	cat.setDenying(true)
	for what, err := range map[string]error{
		"a node check":     st.AddCheck(ctx, ttl("mine", time.Hour)),
		"a service":        st.AddService(ctx, svc("db", "db", 5432), []*checks.Definition{ttl("db-ttl", time.Hour)}),
		"node maintenance": st.SetNodeMaintenance(ctx, true, ""),
		"a deregistration": st.RemoveService(ctx, "web"),
	} {
		if !errors.Is(err, rpc.ErrPermissionDenied) || errors.Is(err, local.ErrNotSynced) {
			t.Errorf("%s refused: got %v, want the refusal, not ErrNotSynced", what, err)
		}
	}
	if ids := localIDs(st); len(ids) != 1 || ids[0] != "web" {
		t.Errorf("services after the refusals: %v, want web", ids)
	}
	if c := st.Checks(); len(c) != 0 {
		t.Errorf("checks after the refusals: %v, want none", c)
	}
	if got := files(); len(got) != len(before) {
		t.Errorf("data dir after the refusals: %v, want %v", got, before)
	}

	cat.setDenying(false)
	cat.setFailing(true)
	if err := st.AddCheck(ctx, ttl("mine", time.Hour)); !errors.Is(err, local.ErrNotSynced) {
		t.Errorf("a check with no server to take it: got %v, want ErrNotSynced", err)
	}
	if c := st.Checks(); len(c) != 1 {
		t.Errorf("checks once unreachable: %v, want the check kept for anti-entropy", c)
	}
}

// TestReservedCheckIDsAreRefused: the gossip and maintenance checks'
// IDs are not for registrations, and such a check persisted before they
// were refused is dropped when the agent starts.
func TestReservedCheckIDsAreRefused(t *testing.T) {
	dir := t.TempDir()
	cat := newFakeCatalog(t)
	st := newState(t, testConfig(dir), cat)
	ctx := context.Background()
	mustAdd(t, st, svc("web", "web", 80))
	for _, id := range []string{"serfHealth", "_node_maintenance", "_service_maintenance:web"} {
		def := ttl(id, time.Hour)
		def.ServiceID = "web"
		var fe *catalog.FieldError
		if err := st.AddCheck(ctx, def); !errors.As(err, &fe) || fe.Field != "CheckID" {
			t.Errorf("AddCheck %s: got %v, want a FieldError naming CheckID", id, err)
		}
		if err := st.AddService(ctx, svc("web", "web", 80), []*checks.Definition{ttl(id, time.Hour)}); !errors.As(err, &fe) {
			t.Errorf("AddService with check %s: got %v, want a FieldError", id, err)
		}
	}
	// A check persisted as the agent stores any, but under a reserved ID.
	def := ttl("web-ttl", time.Hour)
	def.ServiceID = "web"
	if err := st.AddCheck(ctx, def); err != nil {
		t.Fatal(err)
	}
	st.Close()
	file := func(id string) string { return filepath.Join(dir, "checks", hex.EncodeToString([]byte(id))+".json") }
	data, err := os.ReadFile(file("web-ttl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file("web-ttl")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, file("serfHealth"), strings.ReplaceAll(string(data), `"web-ttl"`, `"serfHealth"`))
	after := newState(t, testConfig(dir), cat)
	if c := after.Checks(); len(c) != 0 {
		t.Errorf("checks after a restart: %v, want the persisted serfHealth of web dropped", c)
	}
	if _, err := os.Stat(file("serfHealth")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the persisted serfHealth of web: %v, want it removed", err)
	}
}
