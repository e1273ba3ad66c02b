package tokens

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestStore: configured tokens, runtime changes (by Consul's older names
// too), the agent and DNS tokens falling back to default, an unknown
// kind refused; with persistence the tokens set at runtime replace the
// configured ones at the next start, and a failed write changes nothing.
func TestStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, err := New(map[string]string{Default: "d0", Agent: "", DNS: ""}, path)
	if err != nil {
		t.Fatal(err)
	}
	if s.AgentToken() != "d0" || s.DNSToken() != "d0" {
		t.Errorf("agent %q dns %q, want both the default d0", s.AgentToken(), s.DNSToken())
	}
	for kind, v := range map[string]string{"agent_master": "r1", Agent: "a1", "acl_token": "d1"} {
		if err := s.Set(kind, v); err != nil {
			t.Fatalf("Set(%s): %v", kind, err)
		}
	}
	if s.Get(AgentRecovery) != "r1" || s.AgentToken() != "a1" || s.Func(Default)() != "d1" || s.DNSToken() != "d1" {
		t.Errorf("after Set: recovery %q agent %q default %q", s.Get(AgentRecovery), s.AgentToken(), s.Get(Default))
	}
	if err := s.Set("nope", "x"); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown kind: got %v, want ErrUnknownKind", err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("persisted file: %v, mode %v; want 0600", err, fi.Mode())
	}

	again, err := New(map[string]string{Default: "d0", DNS: "dns0"}, path)
	if err != nil {
		t.Fatal(err)
	}
	if again.Get(Default) != "d1" || again.AgentToken() != "a1" || again.DNSToken() != "dns0" {
		t.Errorf("restarted: default %q agent %q dns %q, want the runtime d1, a1 and the configured dns0",
			again.Get(Default), again.AgentToken(), again.DNSToken())
	}
	noPersist, err := New(map[string]string{Default: "d0"}, "")
	if err != nil || noPersist.Get(Default) != "d0" {
		t.Errorf("without persistence: %q %v, want the configured d0", noPersist.Get(Default), err)
	}

	broken, err := New(nil, filepath.Join(t.TempDir(), "gone", FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := broken.Set(Default, "x"); err == nil || broken.Get(Default) != "" {
		t.Errorf("unwritable file: got %v and default %q, want an error and no change", err, broken.Get(Default))
	}
}
