package catalog_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// sessionStore is a store with node n1, its serfHealth check and a service
// web with check web-http, all passing, at indexes 1 and 2.
func sessionStore(t *testing.T) *catalog.Store {
	t.Helper()
	s := newStore(t)
	mustRegister(t, s, 1, svcReq("n1", "10.0.0.1", "web", "web"))
	mustRegister(t, s, 2, checkReq("n1", check("serfHealth", "", catalog.HealthPassing), check("web-http", "web", catalog.HealthPassing)))
	return s
}

func mustCreateSession(t *testing.T, s *catalog.Store, idx uint64, sess *catalog.Session) {
	t.Helper()
	if sess.Behavior == "" {
		sess.Behavior = catalog.SessionRelease
	}
	if err := catalog.ValidateSession(sess); err != nil {
		t.Fatalf("ValidateSession(%s): %v", sess.ID, err)
	}
	if err := s.ApplySession(idx, t0, &catalog.SessionRequest{Op: catalog.SessionCreate, Session: *sess}); err != nil {
		t.Fatalf("create session %s: %v", sess.ID, err)
	}
}

func lock(t *testing.T, s *catalog.Store, idx uint64, at time.Time, op catalog.KVOp, key, session string) bool {
	t.Helper()
	done, err := s.ApplyKV(idx, at, &catalog.KVRequest{Op: op, Entry: catalog.KVEntry{Key: key, Value: []byte(session), Session: session}})
	if err != nil {
		t.Fatalf("%s %s for %s: %v", op, key, session, err)
	}
	return done
}

func getKey(t *testing.T, s *catalog.Store, key string) *catalog.KVEntry {
	t.Helper()
	_, e, err := s.KVGet(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestValidateSession(t *testing.T) {
	ok := catalog.Session{ID: "s", Node: "n1", Behavior: catalog.SessionRelease}
	for _, tc := range []struct {
		name  string
		edit  func(*catalog.Session)
		field string
	}{
		{"valid", func(*catalog.Session) {}, ""},
		{"no node", func(s *catalog.Session) { s.Node = "" }, "Node"},
		{"bad behavior", func(s *catalog.Session) { s.Behavior = "keep" }, "Behavior"},
		{"ttl too short", func(s *catalog.Session) { s.TTL = "9s" }, "TTL"},
		{"ttl too long", func(s *catalog.Session) { s.TTL = "25h" }, "TTL"},
		{"ttl not a duration", func(s *catalog.Session) { s.TTL = "soon" }, "TTL"},
		{"ttl ok", func(s *catalog.Session) { s.TTL = "10s" }, ""},
		{"lock delay too long", func(s *catalog.Session) { s.LockDelay = time.Hour }, "LockDelay"},
		{"empty service check", func(s *catalog.Session) { s.ServiceChecks = []catalog.ServiceCheck{{}} }, "ServiceChecks[0].ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.edit(&s)
			err := catalog.ValidateSession(&s)
			fe, _ := errors.AsType[*catalog.FieldError](err)
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tc.field != "" && (fe == nil || fe.Field != tc.field):
				t.Errorf("got %v, want a FieldError on %s", err, tc.field)
			}
		})
	}
}

func TestSessionCreateChecksNodeAndChecks(t *testing.T) {
	s := sessionStore(t)
	mustRegister(t, s, 3, checkReq("n1", check("bad", "", catalog.HealthCritical)))
	for _, tc := range []struct {
		name  string
		sess  catalog.Session
		field string
	}{
		{"no such node", catalog.Session{Node: "n2"}, "Node"},
		{"no such check", catalog.Session{Node: "n1", NodeChecks: []string{"serfHealth", "nope"}}, "NodeChecks[1]"},
		{"critical check", catalog.Session{Node: "n1", NodeChecks: []string{"bad"}}, "NodeChecks[0]"},
		{"node check as service check", catalog.Session{Node: "n1", ServiceChecks: []catalog.ServiceCheck{{ID: "serfHealth"}}}, "ServiceChecks[0].ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.sess.ID, tc.sess.Behavior = "s-"+tc.name, catalog.SessionRelease
			err := s.ApplySession(4, t0, &catalog.SessionRequest{Op: catalog.SessionCreate, Session: tc.sess})
			if fe, _ := errors.AsType[*catalog.FieldError](err); fe == nil || fe.Field != tc.field {
				t.Errorf("got %v, want a FieldError on %s", err, tc.field)
			}
		})
	}
	mustCreateSession(t, s, 5, &catalog.Session{ID: "s1", Node: "n1", NodeChecks: []string{"serfHealth"},
		ServiceChecks: []catalog.ServiceCheck{{ID: "web-http"}}, TTL: "30s"})
	idx, got, err := s.SessionGet(nil, "s1")
	if err != nil || got == nil || got.CreateIndex != 5 || idx != 5 || got.TTLDuration() != 30*time.Second {
		t.Fatalf("SessionGet(s1): got %+v at %d, %v", got, idx, err)
	}
	if _, l, _ := s.SessionList(nil, "N1"); len(l) != 1 {
		t.Errorf("SessionList(N1): got %d sessions, want 1", len(l))
	}
	if _, l, _ := s.SessionList(nil, "n2"); len(l) != 0 {
		t.Errorf("SessionList(n2): got %d sessions, want 0", len(l))
	}
}

func TestKVLockUnlock(t *testing.T) {
	s := sessionStore(t)
	mustCreateSession(t, s, 3, &catalog.Session{ID: "a", Node: "n1", LockDelay: 10 * time.Second})
	mustCreateSession(t, s, 4, &catalog.Session{ID: "b", Node: "n1"})

	if _, err := s.ApplyKV(5, t0, &catalog.KVRequest{Op: catalog.KVLock, Entry: catalog.KVEntry{Key: "k", Session: "nosuch"}}); err == nil {
		t.Error("lock with no such session: got nil error")
	}
	if !lock(t, s, 6, t0, catalog.KVLock, "k", "a") {
		t.Fatal("a's first lock: got false")
	}
	if e := getKey(t, s, "k"); e.Session != "a" || e.LockIndex != 1 || string(e.Value) != "a" {
		t.Errorf("after a's lock: got %+v", e)
	}
	if lock(t, s, 7, t0, catalog.KVLock, "k", "b") {
		t.Error("b's lock of a's key: got true")
	}
	if !lock(t, s, 8, t0, catalog.KVLock, "k", "a") {
		t.Error("a's second lock: got false")
	}
	if e := getKey(t, s, "k"); e.LockIndex != 1 || e.ModifyIndex != 8 {
		t.Errorf("a's second lock: got LockIndex %d ModifyIndex %d, want 1, 8", e.LockIndex, e.ModifyIndex)
	}
	if lock(t, s, 9, t0, catalog.KVUnlock, "k", "b") {
		t.Error("b's release of a's key: got true")
	}
	if !lock(t, s, 10, t0, catalog.KVUnlock, "k", "a") {
		t.Error("a's release: got false")
	}
	if e := getKey(t, s, "k"); e.Session != "" || e.LockIndex != 1 || e.ModifyIndex != 10 {
		t.Errorf("after release: got %+v", e)
	}
	// A release is not an end of the session: no lock-delay.
	if !lock(t, s, 11, t0, catalog.KVLock, "k", "b") {
		t.Error("b's lock after a's release: got false")
	}
	if e := getKey(t, s, "k"); e.Session != "b" || e.LockIndex != 2 {
		t.Errorf("after b's lock: got %+v, want LockIndex 2", e)
	}
	if lock(t, s, 12, t0, catalog.KVUnlock, "nokey", "b") {
		t.Error("release of a missing key: got true")
	}
}

func TestSessionDestroyReleasesWithLockDelay(t *testing.T) {
	s := sessionStore(t)
	mustCreateSession(t, s, 3, &catalog.Session{ID: "a", Node: "n1", LockDelay: 10 * time.Second})
	mustCreateSession(t, s, 4, &catalog.Session{ID: "b", Node: "n1"})
	lock(t, s, 5, t0, catalog.KVLock, "k", "a")
	if err := s.ApplySession(6, t0.Add(time.Second), &catalog.SessionRequest{Op: catalog.SessionDestroy, Session: catalog.Session{ID: "a"}}); err != nil {
		t.Fatal(err)
	}
	if _, sess, _ := s.SessionGet(nil, "a"); sess != nil {
		t.Errorf("a after destroy: got %+v", sess)
	}
	if e := getKey(t, s, "k"); e == nil || e.Session != "" || e.ModifyIndex != 6 || string(e.Value) != "a" {
		t.Errorf("k after a's destroy: got %+v, want released at 6, value kept", e)
	}
	// The lock-delay runs 10s from the destroy's time stamp.
	if lock(t, s, 7, t0.Add(10*time.Second), catalog.KVLock, "k", "b") {
		t.Error("lock within the lock-delay: got true")
	}
	// It survives a snapshot.
	d, err := s.Dump()
	if err != nil {
		t.Fatal(err)
	}
	r := newStore(t)
	if err := r.Restore(d); err != nil {
		t.Fatal(err)
	}
	if lock(t, r, 8, t0.Add(10*time.Second), catalog.KVLock, "k", "b") {
		t.Error("lock within the lock-delay after a restore: got true")
	}
	if !lock(t, r, 9, t0.Add(11*time.Second), catalog.KVLock, "k", "b") {
		t.Error("lock after the lock-delay (restored store): got false")
	}
	if !lock(t, s, 9, t0.Add(11*time.Second), catalog.KVLock, "k", "b") {
		t.Error("lock after the lock-delay: got false")
	}
}

func TestSessionBehaviorDeleteDeletesKeys(t *testing.T) {
	s := sessionStore(t)
	mustCreateSession(t, s, 3, &catalog.Session{ID: "a", Node: "n1", Behavior: catalog.SessionDelete})
	lock(t, s, 4, t0, catalog.KVLock, "k1", "a")
	lock(t, s, 5, t0, catalog.KVLock, "k2", "a")
	mustKVSet(t, s, 6, "other", "x")
	if err := s.ApplySession(7, t0, &catalog.SessionRequest{Op: catalog.SessionDestroy, Session: catalog.Session{ID: "a"}}); err != nil {
		t.Fatal(err)
	}
	_, all, _ := s.KVList(nil, "")
	if len(all) != 1 || all[0].Key != "other" {
		t.Errorf("keys after a delete session's end: got %d entries, want only other", len(all))
	}
}

func TestSessionInvalidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		apply func(s *catalog.Store, idx uint64) error
		ends  []string // sessions ended, of: node (serfHealth), svc (web-http), none (no checks)
	}{
		{"node check critical", func(s *catalog.Store, idx uint64) error {
			return s.RegisterAt(idx, t0, checkReq("n1", check("serfHealth", "", catalog.HealthCritical)))
		}, []string{"node"}},
		{"node check warning", func(s *catalog.Store, idx uint64) error {
			return s.RegisterAt(idx, t0, checkReq("n1", check("serfHealth", "", catalog.HealthWarning)))
		}, nil},
		{"service check critical", func(s *catalog.Store, idx uint64) error {
			return s.RegisterAt(idx, t0, checkReq("n1", check("web-http", "web", catalog.HealthCritical)))
		}, []string{"svc"}},
		{"check deleted", func(s *catalog.Store, idx uint64) error {
			return s.DeregisterAt(idx, t0, &catalog.DeregisterRequest{Node: "n1", CheckID: "serfHealth"})
		}, []string{"node"}},
		{"service deleted", func(s *catalog.Store, idx uint64) error {
			return s.DeregisterAt(idx, t0, &catalog.DeregisterRequest{Node: "n1", ServiceID: "web"})
		}, []string{"svc"}},
		{"node deleted", func(s *catalog.Store, idx uint64) error {
			return s.DeregisterAt(idx, t0, &catalog.DeregisterRequest{Node: "n1"})
		}, []string{"node", "svc", "none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sessionStore(t)
			mustCreateSession(t, s, 3, &catalog.Session{ID: "node", Node: "n1", NodeChecks: []string{"serfHealth"}, LockDelay: time.Second})
			mustCreateSession(t, s, 4, &catalog.Session{ID: "svc", Node: "n1", ServiceChecks: []catalog.ServiceCheck{{ID: "web-http"}}})
			mustCreateSession(t, s, 5, &catalog.Session{ID: "none", Node: "n1"})
			lock(t, s, 6, t0, catalog.KVLock, "lock/node", "node")
			if err := tc.apply(s, 7); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"node", "svc", "none"} {
				_, sess, _ := s.SessionGet(nil, id)
				want := true
				for _, e := range tc.ends {
					want = want && e != id
				}
				if got := sess != nil; got != want {
					t.Errorf("session %s exists: got %v, want %v", id, got, want)
				}
			}
			e := getKey(t, s, "lock/node")
			ended := len(tc.ends) > 0 && tc.ends[0] == "node"
			if got := e.Session == ""; got != ended {
				t.Errorf("lock/node released: got %v, want %v", got, ended)
			}
		})
	}
}
