package main

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestKeygen(t *testing.T) {
	seen := map[string]bool{}
	for range 2 {
		stdout, stderr, code := runCLI(t, "keygen")
		if code != 0 || stderr != "" {
			t.Fatalf("got exit code %d, stderr %q", code, stderr)
		}
		key, ok := strings.CutSuffix(stdout, "\n")
		raw, err := base64.StdEncoding.DecodeString(key)
		if !ok || err != nil || len(raw) != 32 {
			t.Errorf("got %q, want the base64 of 32 bytes and a newline", stdout)
		}
		if seen[key] {
			t.Errorf("keygen printed %s twice", key)
		}
		seen[key] = true
	}
	_, stderr, code := runCLI(t, "keygen", "extra")
	wantUsage(t, stderr, code, "takes no arguments")
}
