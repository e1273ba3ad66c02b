package rpc

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestServerMetrics: calls are counted by method and result, blocking
// queries are counted as open while they run and not timed.
func TestServerMetrics(t *testing.T) {
	m := newServerMetrics()
	plain := reflect.ValueOf(&KVSGetRequest{Key: "k"})
	blocking := reflect.ValueOf(&KVSGetRequest{Key: "k", QueryOptions: QueryOptions{MinQueryIndex: 7}})

	_ = m.observe("KVS.Get", plain, func() error { return nil })
	_ = m.observe("KVS.Get", plain, func() error { return fmt.Errorf("apply: %w", ErrNotLeader) })
	_ = m.observe("KVS.Get", blocking, func() error {
		if n := testutil.ToFloat64(m.blocking.WithLabelValues("KVS.Get")); n != 1 {
			t.Errorf("blocking queries open during one: got %v, want 1", n)
		}
		return context.Canceled
	})
	for _, tc := range []struct {
		result string
		want   float64
	}{{"ok", 1}, {"no_leader", 1}, {"canceled", 1}, {"error", 0}} {
		if got := testutil.ToFloat64(m.calls.WithLabelValues("KVS.Get", tc.result)); got != tc.want {
			t.Errorf("calls with result %s: got %v, want %v", tc.result, got, tc.want)
		}
	}
	if n := testutil.ToFloat64(m.blocking.WithLabelValues("KVS.Get")); n != 0 {
		t.Errorf("blocking queries open after: got %v, want 0", n)
	}
	if n := testutil.CollectAndCount(m.duration); n != 1 {
		t.Errorf("timed series: got %d, want 1 (the blocking query is not timed)", n)
	}
	if got := resultOf(errors.Join(errors.New("x"), ErrPermissionDenied)); got != "permission_denied" {
		t.Errorf("resultOf(permission denied): got %q", got)
	}
}
