package rpc_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// TestClassifyEveryRPCError reads every sentinel rpc declares (from its
// source, so a new one fails here until it is classified) as a caller
// meets it in process and as it arrives from a server, and checks what
// Classify makes of it: the one answer the client door and the server
// forwards act on.
func TestClassifyEveryRPCError(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		err      error
		local    rpc.Failure
		overWire rpc.Failure // what a server sends for it (WireError)
	}{
		// A server sends its own failed hop as ErrServerStopping
		// (serverSideCancel); WireError alone gives it no code.
		"ErrTransport":              {rpc.ErrTransport, rpc.Broken, rpc.Answered},
		"ErrNotSent":                {fmt.Errorf("%w: %w", rpc.ErrTransport, rpc.ErrNotSent), rpc.Unsent, rpc.Answered},
		"ErrCodec":                  {rpc.ErrCodec, rpc.Answered, rpc.Answered},
		"ErrMessageTooLarge":        {rpc.ErrMessageTooLarge, rpc.Answered, rpc.Answered},
		"ErrPoolClosed":             {rpc.ErrPoolClosed, rpc.Answered, rpc.Stopping},
		"ErrServerClosed":           {rpc.ErrServerClosed, rpc.Answered, rpc.Stopping},
		"ErrNoPathToDatacenter":     {rpc.ErrNoPathToDatacenter, rpc.Answered, rpc.Answered},
		"ErrUnknownDatacenter":      {rpc.ErrUnknownDatacenter, rpc.Answered, rpc.Answered},
		"ErrRateLimited":            {rpc.ErrRateLimited, rpc.Answered, rpc.Answered},
		"ErrTooManyCalls":           {rpc.ErrTooManyCalls, rpc.Busy, rpc.Busy},
		"ErrUnknownOutcome":         {rpc.ErrUnknownOutcome, rpc.Unknown, rpc.Unknown},
		"ErrServerStopping":         {rpc.ErrServerStopping, rpc.Stopping, rpc.Stopping},
		"ErrNoLeader":               {rpc.ErrNoLeader, rpc.NoLeader, rpc.NoLeader},
		"ErrNotLeader":              {rpc.ErrNotLeader, rpc.NotLeader, rpc.NotLeader},
		"ErrConflictingConsistency": {rpc.ErrConflictingConsistency, rpc.Answered, rpc.Answered},
		"ErrPermissionDenied":       {rpc.ErrPermissionDenied, rpc.Answered, rpc.Answered},
		"ErrACLNotFound":            {rpc.ErrACLNotFound, rpc.Answered, rpc.Answered},
		"ErrACLDisabled":            {rpc.ErrACLDisabled, rpc.Answered, rpc.Answered},
		"ErrStreamEnded":            {rpc.ErrStreamEnded, rpc.Answered, rpc.Answered},
		// Only ever met with ErrTransport (CallPinged): Broken or Unsent.
		"ErrServerHung": {rpc.ErrServerHung, rpc.Answered, rpc.Answered},
	}
	if got, want := rpctest.ExportedErrors(t, "."), slices.Sorted(maps.Keys(cases)); !slices.Equal(got, want) {
		t.Fatalf("rpc declares the sentinels %v; this test knows %v: classify a new one, and add it here", got, want)
	}
	for name, c := range cases {
		err := fmt.Errorf("doing something: %w", c.err)
		if got := rpc.Classify(err); got != c.local {
			t.Errorf("%s in process: Classify(%v) = %d, want %d", name, err, got, c.local)
		}
		remote := rpc.NewRemoteError(rpc.WireError(err).Error())
		if got := rpc.Classify(remote); got != c.overWire {
			t.Errorf("%s from a server: Classify(%v) = %d, want %d", name, remote, got, c.overWire)
		}
	}
	others := map[string]struct {
		err  error
		want rpc.Failure
	}{
		// A leader that lost leadership mid-apply says both: it is not
		// the leader any more, which is what a forward acts on.
		"outcome, leader": {fmt.Errorf("raft apply: %w: %w", rpc.ErrUnknownOutcome, rpc.ErrNotLeader), rpc.NotLeader},
		"deadline":        {fmt.Errorf("call: %w", context.DeadlineExceeded), rpc.Answered},
		"canceled":        {fmt.Errorf("call: %w", context.Canceled), rpc.Answered},
		"hung, not sent":  {fmt.Errorf("%w: %w: hung", rpc.ErrTransport, rpc.ErrNotSent), rpc.Unsent},
	}
	for name, c := range others {
		if got := rpc.Classify(c.err); got != c.want {
			t.Errorf("%s: Classify(%v) = %d, want %d", name, c.err, got, c.want)
		}
	}
	// Which failures another server may take, and which certainly did
	// nothing (a write that met any other may have been applied).
	for f, want := range map[rpc.Failure]struct{ elsewhere, unapplied bool }{
		rpc.Answered:  {false, false},
		rpc.Unsent:    {true, true},
		rpc.Broken:    {true, false},
		rpc.NoLeader:  {true, true},
		rpc.Busy:      {true, true},
		rpc.NotLeader: {true, false},
		rpc.Stopping:  {true, false},
		rpc.Unknown:   {true, false},
	} {
		if f.Elsewhere() != want.elsewhere || f.Unapplied() != want.unapplied {
			t.Errorf("failure %d: Elsewhere %v, Unapplied %v; want %v, %v", f, f.Elsewhere(), f.Unapplied(), want.elsewhere, want.unapplied)
		}
	}
}
