package rpc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrServerHung is the cause of a call abandoned because its server missed
// a ping.
var ErrServerHung = errors.New("the server stopped answering")

// Pings is when CallPinged pings a call's server: After the call started,
// then Every while it waits, each ping given Timeout.
type Pings struct {
	After, Every, Timeout time.Duration
}

// CallPinged runs call, pinging its server while it waits: a hung server
// (stopped, or cut off) keeps its connection open and the call unanswered,
// and only a missed ping tells it from a slow one or a blocking read
// waiting on purpose. A ping that fails while ctx lives cancels the call
// (cause ErrServerHung), waits for it to return, and returns an error
// wrapping ErrTransport and ErrServerHung, and ErrNotSent when the call's
// own error says the request never left. ping runs on the caller's
// goroutine.
func CallPinged(ctx context.Context, p Pings, call, ping func(context.Context) error) error {
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- call(callCtx) }()
	t := time.NewTimer(p.After)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-t.C:
			pctx, pcancel := context.WithTimeout(ctx, p.Timeout)
			err := ping(pctx)
			pcancel()
			if err != nil && ctx.Err() == nil {
				cancel(ErrServerHung)
				// Whether the request left is the call's to say (not
				// when the server hung before answering a new session:
				// a write may then go elsewhere), not the ping's.
				if errors.Is(<-done, ErrNotSent) {
					return fmt.Errorf("%w: %w: %w (ping: %v)", ErrTransport, ErrNotSent, ErrServerHung, err)
				}
				return fmt.Errorf("%w: %w (ping: %v)", ErrTransport, ErrServerHung, err)
			}
			t.Reset(p.Every)
		}
	}
}
