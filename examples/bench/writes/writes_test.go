package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"testing"
)

func TestMedianOf(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := medianOf(tc.in); got != tc.want {
			t.Errorf("medianOf(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestEtcdPut checks the gateway request: base64 key and value, as
// etcd's JSON mapping of bytes fields wants.
func TestEtcdPut(t *testing.T) {
	req, err := etcdSystem("etcd").write["kv"](context.Background(), "http://127.0.0.1:2379", 7, 42)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := req.URL.String(), "http://127.0.0.1:2379/v3/kv/put"; got != want || req.Method != "POST" {
		t.Fatalf("got %s %s, want POST %s", req.Method, got, want)
	}
	b, _ := io.ReadAll(req.Body)
	var body struct{ Key, Value string }
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	k, _ := base64.StdEncoding.DecodeString(body.Key)
	v, _ := base64.StdEncoding.DecodeString(body.Value)
	if string(k) != kvKey(7, 42) || len(v) != 100 {
		t.Errorf("got key %q and a value of %d bytes, want %q and 100", k, len(v), kvKey(7, 42))
	}
}

func TestNamesAndCounts(t *testing.T) {
	if _, err := names("cairn,cairn", "cairn"); err == nil {
		t.Error("names accepted a repeated name")
	}
	if _, err := names("cairn,zk", "cairn", "etcd"); err == nil {
		t.Error("names accepted an unknown name")
	}
	if got, err := counts("1, 8,32"); err != nil || len(got) != 3 || got[1] != 8 {
		t.Errorf("counts = %v, %v; want [1 8 32]", got, err)
	}
	if _, err := counts("0"); err == nil {
		t.Error("counts accepted 0")
	}
}
