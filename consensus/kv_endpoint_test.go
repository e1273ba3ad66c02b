package consensus

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
)

// startKVS starts an endpoint harness (startEndpoint) with the KVS and ACL
// endpoints registered too.
func startKVS(t *testing.T, tune func(*CatalogConfig)) *endpointHarness {
	t.Helper()
	h := startEndpoint(t, true, tune)
	if err := h.rpc.Register(rpc.KVSEndpoint, NewKVS(h.cat)); err != nil {
		t.Fatal(err)
	}
	if err := h.rpc.Register(rpc.ACLEndpoint, NewACL(h.cat)); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *endpointHarness) kvApply(op catalog.KVOp, key, value string, cas uint64, token string) (bool, error) {
	args := &rpc.KVSApplyRequest{
		WriteRequest: rpc.WriteRequest{Token: token}, Op: op,
		Entry: catalog.KVEntry{Key: key, Value: []byte(value), RaftIndex: catalog.RaftIndex{ModifyIndex: cas}},
	}
	var reply rpc.KVSApplyResponse
	err := h.call(rpc.MethodKVSApply, args, &reply)
	return reply.Result, err
}

func (h *endpointHarness) mustKVApply(t *testing.T, op catalog.KVOp, key, value string, cas uint64, want bool) {
	t.Helper()
	got, err := h.kvApply(op, key, value, cas, "")
	if err != nil || got != want {
		t.Fatalf("%s %q (cas %d): got %v, %v; want %v", op, key, cas, got, err, want)
	}
}

func (h *endpointHarness) kvGet(t *testing.T, args *rpc.KVSGetRequest) *rpc.KVSEntriesResponse {
	t.Helper()
	var reply rpc.KVSEntriesResponse
	h.mustCall(t, rpc.MethodKVSGet, args, &reply)
	return &reply
}

func entryKeys(es []*catalog.KVEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Key)
	}
	return out
}

func TestKVSEndpointApplyAndRead(t *testing.T) {
	h := startKVS(t, nil)
	h.mustKVApply(t, catalog.KVSet, "app/a", "1", 0, true)
	got := h.kvGet(t, &rpc.KVSGetRequest{Key: "app/a"})
	if len(got.Entries) != 1 || string(got.Entries[0].Value) != "1" || got.Index != got.Entries[0].ModifyIndex {
		t.Fatalf("Get(app/a): got %+v at %d, want value 1 at its ModifyIndex", got.Entries, got.Index)
	}
	mod := got.Entries[0].ModifyIndex

	// CAS: a stale index is refused, the current one writes.
	h.mustKVApply(t, catalog.KVCAS, "app/a", "2", mod-1, false)
	h.mustKVApply(t, catalog.KVCAS, "app/a", "2", 0, false)
	h.mustKVApply(t, catalog.KVCAS, "app/a", "2", mod, true)
	h.mustKVApply(t, catalog.KVCAS, "app/new", "n", 0, true)
	h.mustKVApply(t, catalog.KVSet, "app/b/c", "3", 0, true)
	h.mustKVApply(t, catalog.KVSet, "other", "4", 0, true)

	var list rpc.KVSEntriesResponse
	h.mustCall(t, rpc.MethodKVSList, &rpc.KVSListRequest{Prefix: "app/"}, &list)
	if want := []string{"app/a", "app/b/c", "app/new"}; !reflect.DeepEqual(entryKeys(list.Entries), want) {
		t.Errorf("List(app/): got %v, want %v", entryKeys(list.Entries), want)
	}
	var keys rpc.KVSKeysResponse
	h.mustCall(t, rpc.MethodKVSListKeys, &rpc.KVSListKeysRequest{Prefix: "app/", Separator: "/"}, &keys)
	if want := []string{"app/a", "app/b/", "app/new"}; !reflect.DeepEqual(keys.Keys, want) {
		t.Errorf("ListKeys(app/, /): got %v, want %v", keys.Keys, want)
	}

	// delete-cas, then delete-tree.
	cur := h.kvGet(t, &rpc.KVSGetRequest{Key: "app/new"}).Entries[0].ModifyIndex
	h.mustKVApply(t, catalog.KVDeleteCAS, "app/new", "", cur-1, false)
	h.mustKVApply(t, catalog.KVDeleteCAS, "app/new", "", cur, true)
	h.mustKVApply(t, catalog.KVDeleteTree, "app/", "", 0, true)
	h.mustCall(t, rpc.MethodKVSList, &rpc.KVSListRequest{}, &list)
	if want := []string{"other"}; !reflect.DeepEqual(entryKeys(list.Entries), want) {
		t.Errorf("List after delete-tree: got %v, want %v", entryKeys(list.Entries), want)
	}
	if r := h.kvGet(t, &rpc.KVSGetRequest{Key: "app/a"}); len(r.Entries) != 0 || r.Index < cur {
		t.Errorf("Get(app/a) after delete-tree: got %+v at %d, want none at an index of at least %d", r.Entries, r.Index, cur)
	}
}

func TestKVSEndpointValidation(t *testing.T) {
	h := startKVS(t, nil)
	_, err := h.kvApply(catalog.KVSet, "", "v", 0, "")
	expectWireError(t, err, "set without a key", "Key", nil)
	_, err = h.kvApply(catalog.KVSet, "/a", "v", 0, "")
	expectWireError(t, err, "set of /a", "Key", nil)
	_, err = h.kvApply(catalog.KVSet, "a", string(make([]byte, catalog.DefaultKVMaxValueSize+1)), 0, "")
	expectWireError(t, err, "set of a large value", "Value", nil)
	_, err = h.kvApply("steal", "a", "", 0, "")
	expectWireError(t, err, "an unknown op", "Op", nil)
	_, err = h.kvApply(catalog.KVLock, "a", "", 0, "")
	expectWireError(t, err, "a lock without a session", "Session", nil)
	err = h.call(rpc.MethodKVSGet, &rpc.KVSGetRequest{}, &rpc.KVSEntriesResponse{})
	expectWireError(t, err, "get without a key", "Key", nil)
	var list rpc.KVSEntriesResponse
	h.mustCall(t, rpc.MethodKVSList, &rpc.KVSListRequest{}, &list)
	if len(list.Entries) != 0 {
		t.Errorf("rejected writes left %v", entryKeys(list.Entries))
	}
}

// TestKVSEndpointBlockingGet: a blocking Get returns when the key is
// written, and when it is deleted, with an index past the one it waited
// on; a Get of an absent key blocks until the key appears.
func TestKVSEndpointBlockingGet(t *testing.T) {
	h := startKVS(t, nil)
	h.mustKVApply(t, catalog.KVSet, "k", "1", 0, true)
	first := h.kvGet(t, &rpc.KVSGetRequest{Key: "k"})

	blockingGet := func(key string, index uint64) <-chan *rpc.KVSEntriesResponse {
		ch := make(chan *rpc.KVSEntriesResponse, 1)
		go func() {
			var reply rpc.KVSEntriesResponse
			args := &rpc.KVSGetRequest{QueryOptions: rpc.QueryOptions{MinQueryIndex: index, MaxQueryTime: time.Minute}, Key: key}
			if err := h.call(rpc.MethodKVSGet, args, &reply); err != nil {
				t.Errorf("blocking Get(%s): %v", key, err)
			}
			ch <- &reply
		}()
		return ch
	}
	await := func(ch <-chan *rpc.KVSEntriesResponse) *rpc.KVSEntriesResponse {
		t.Helper()
		select {
		case r := <-ch:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("the blocking Get did not return")
			return nil
		}
	}

	ch := blockingGet("k", first.Index)
	h.mustKVApply(t, catalog.KVSet, "k", "2", 0, true)
	r := await(ch)
	if len(r.Entries) != 1 || string(r.Entries[0].Value) != "2" || r.Index <= first.Index {
		t.Errorf("after a write: got %+v at %d, want value 2 at an index past %d", r.Entries, r.Index, first.Index)
	}

	ch = blockingGet("k", r.Index)
	h.mustKVApply(t, catalog.KVDelete, "k", "", 0, true)
	d := await(ch)
	if len(d.Entries) != 0 || d.Index <= r.Index {
		t.Errorf("after a delete: got %+v at %d, want none at an index past %d", d.Entries, d.Index, r.Index)
	}

	ch = blockingGet("k", d.Index)
	h.mustKVApply(t, catalog.KVSet, "k", "3", 0, true)
	if r := await(ch); len(r.Entries) != 1 || string(r.Entries[0].Value) != "3" {
		t.Errorf("after re-creating the key: got %+v, want value 3", r.Entries)
	}
}

// TestKVSEndpointACL: a token with write on key_prefix "app/" writes
// app/x and not other/x, reads only under app/, sees lists filtered, and
// may delete the tree app/ but not everything.
func TestKVSEndpointACL(t *testing.T) {
	h := startKVS(t, func(c *CatalogConfig) { c.ACL = ACLConfig{Enabled: true} })
	mgmt, app := h.aclTokens(t, "app", `key_prefix "app/" { policy = "write" }`)

	if ok, err := h.kvApply(catalog.KVSet, "app/x", "1", 0, app); err != nil || !ok {
		t.Fatalf("set app/x with the app token: got %v, %v; want true", ok, err)
	}
	_, err := h.kvApply(catalog.KVSet, "other/x", "1", 0, app)
	expectWireError(t, err, "set other/x with the app token", "", rpc.ErrPermissionDenied)
	_, err = h.kvApply(catalog.KVSet, "app/y", "1", 0, "")
	expectWireError(t, err, "set app/y anonymously", "", rpc.ErrPermissionDenied)
	if ok, err := h.kvApply(catalog.KVSet, "other/y", "2", 0, mgmt); err != nil || !ok {
		t.Fatalf("set other/y with the management token: got %v, %v; want true", ok, err)
	}

	err = h.call(rpc.MethodKVSGet, &rpc.KVSGetRequest{QueryOptions: rpc.QueryOptions{Token: app}, Key: "other/y"}, &rpc.KVSEntriesResponse{})
	expectWireError(t, err, "get other/y with the app token", "", rpc.ErrPermissionDenied)
	if r := h.kvGet(t, &rpc.KVSGetRequest{QueryOptions: rpc.QueryOptions{Token: app}, Key: "app/x"}); len(r.Entries) != 1 {
		t.Errorf("get app/x with the app token: got %+v, want the entry", r.Entries)
	}

	var list rpc.KVSEntriesResponse
	h.mustCall(t, rpc.MethodKVSList, &rpc.KVSListRequest{QueryOptions: rpc.QueryOptions{Token: app}}, &list)
	if want := []string{"app/x"}; !reflect.DeepEqual(entryKeys(list.Entries), want) || !list.ResultsFilteredByACLs {
		t.Errorf("list with the app token: got %v (filtered %v), want %v, filtered", entryKeys(list.Entries), list.ResultsFilteredByACLs, want)
	}
	var keys rpc.KVSKeysResponse
	h.mustCall(t, rpc.MethodKVSListKeys, &rpc.KVSListKeysRequest{QueryOptions: rpc.QueryOptions{Token: app}}, &keys)
	if want := []string{"app/x"}; !reflect.DeepEqual(keys.Keys, want) || !keys.ResultsFilteredByACLs {
		t.Errorf("keys with the app token: got %v (filtered %v), want %v, filtered", keys.Keys, keys.ResultsFilteredByACLs, want)
	}
	h.mustCall(t, rpc.MethodKVSList, &rpc.KVSListRequest{QueryOptions: rpc.QueryOptions{Token: mgmt}}, &list)
	if want := []string{"app/x", "other/y"}; !reflect.DeepEqual(entryKeys(list.Entries), want) || list.ResultsFilteredByACLs {
		t.Errorf("list with the management token: got %v (filtered %v), want %v, unfiltered", entryKeys(list.Entries), list.ResultsFilteredByACLs, want)
	}

	_, err = h.kvApply(catalog.KVDeleteTree, "", "", 0, app)
	expectWireError(t, err, "delete-tree of everything with the app token", "", rpc.ErrPermissionDenied)
	if ok, err := h.kvApply(catalog.KVDeleteTree, "app/", "", 0, app); err != nil || !ok {
		t.Errorf("delete-tree app/ with the app token: got %v, %v; want true", ok, err)
	}
}

// TestKVSurvivesRestart: key/value writes replay from a snapshot and from
// the log after it, CAS outcomes included.
func TestKVSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	ctx := t.Context()
	set := func(op catalog.KVOp, key, value string, cas uint64, want bool) {
		t.Helper()
		req := &catalog.KVRequest{Op: op, Entry: catalog.KVEntry{Key: key, Value: []byte(value), RaftIndex: catalog.RaftIndex{ModifyIndex: cas}}}
		if done, err := s.ApplyKV(ctx, req); err != nil || done != want {
			t.Fatalf("ApplyKV(%s %s): got %v, %v; want %v", op, key, done, err, want)
		}
	}
	set(catalog.KVSet, "a", "1", 0, true)
	set(catalog.KVSet, "gone", "x", 0, true)
	if err := s.Snapshot(); err != nil {
		t.Fatal(err)
	}
	set(catalog.KVCAS, "b", "2", 0, true)
	set(catalog.KVCAS, "b", "3", 0, false)
	set(catalog.KVDelete, "gone", "", 0, true)
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}

	s = startServer(t, dir)
	defer s.Shutdown()
	waittest.For(t, 5*time.Second, "the keys after a restart", func() error {
		_, list, err := s.Store().KVList(nil, "")
		if err == nil && (!reflect.DeepEqual(entryKeys(list), []string{"a", "b"}) || string(list[1].Value) != "2") {
			err = fmt.Errorf("got %v, want a and b=2", entryKeys(list))
		}
		return err
	})
}
