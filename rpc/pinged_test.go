package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairndns/cairn/rpc"
)

// TestCallPinged: a call whose server answers its pings runs to its end
// however long it waits; one whose server misses a ping is canceled with
// ErrServerHung as the cause and ends with a transport error (not sent
// when the call says so); a ping failing because the caller gave up is no
// hang.
func TestCallPinged(t *testing.T) {
	t.Parallel()
	pings := rpc.Pings{After: time.Second, Every: 5 * time.Second, Timeout: time.Second}
	errNo := errors.New("no answer")
	for _, tc := range []struct {
		name    string
		callErr error         // what the call returns once canceled
		pingOK  int           // pings answered before one fails (-1: all)
		answer  time.Duration // when the call answers by itself (0: never)
		cancel  time.Duration // when the caller gives up (0: never)
		want    []error
		notWant []error
		took    time.Duration
	}{
		{name: "answers, pinged", pingOK: -1, answer: 12 * time.Second, took: 12 * time.Second},
		{name: "hangs", pingOK: 2, callErr: context.Canceled, want: []error{rpc.ErrTransport, rpc.ErrServerHung},
			notWant: []error{rpc.ErrNotSent}, took: 12 * time.Second},
		{name: "hangs unsent", pingOK: 0, callErr: fmt.Errorf("%w: %w", rpc.ErrTransport, rpc.ErrNotSent),
			want: []error{rpc.ErrTransport, rpc.ErrNotSent, rpc.ErrServerHung}, took: 2 * time.Second},
		{name: "caller gives up", pingOK: 0, callErr: context.Canceled, cancel: 1500 * time.Millisecond,
			want: []error{context.Canceled}, notWant: []error{rpc.ErrServerHung}, took: 1500 * time.Millisecond},
	} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel > 0 {
				time.AfterFunc(tc.cancel, cancel)
			}
			var cause error
			call := func(ctx context.Context) error {
				if tc.answer > 0 {
					select {
					case <-time.After(tc.answer):
						return nil
					case <-ctx.Done():
					}
				}
				<-ctx.Done()
				cause = context.Cause(ctx)
				return tc.callErr
			}
			answered := 0
			ping := func(pctx context.Context) error {
				if tc.pingOK >= 0 && answered >= tc.pingOK {
					<-pctx.Done() // a hung server: no answer within Timeout
					return errNo
				}
				answered++
				return nil
			}
			start := time.Now()
			err := rpc.CallPinged(ctx, pings, call, ping)
			if took := time.Since(start); took != tc.took {
				t.Errorf("%s: took %v, want %v", tc.name, took, tc.took)
			}
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("%s: got %v, want it to wrap %v", tc.name, err, w)
				}
			}
			for _, w := range tc.notWant {
				if errors.Is(err, w) {
					t.Errorf("%s: got %v, want it not to wrap %v", tc.name, err, w)
				}
			}
			if len(tc.want) == 0 && err != nil {
				t.Errorf("%s: got %v, want the call's answer", tc.name, err)
			}
			if errors.Is(err, rpc.ErrServerHung) && cause != rpc.ErrServerHung {
				t.Errorf("%s: the call was canceled with cause %v, want ErrServerHung", tc.name, cause)
			}
		})
	}
}
