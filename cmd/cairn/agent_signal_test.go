package main

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/cairndns/cairn/agent"
)

// TestStopCause: the signal that stops the agent reaches it as the cause
// it decides to leave the cluster by.
func TestStopCause(t *testing.T) {
	for _, tc := range []struct {
		sig  os.Signal
		want error
	}{{os.Interrupt, agent.ErrInterrupted}, {syscall.SIGTERM, agent.ErrTerminated}} {
		if got := stopCause(tc.sig); !errors.Is(got, tc.want) {
			t.Errorf("%v: got %v, want %v", tc.sig, got, tc.want)
		}
	}
}
