package consensus

import (
	"errors"
	"testing"

	"github.com/cairndns/cairn/rpc"
	"github.com/hashicorp/raft"
)

// failedFuture is an ApplyFuture that Raft answered with err.
type failedFuture struct{ err error }

func (f failedFuture) Error() error  { return f.err }
func (f failedFuture) Index() uint64 { return 0 }
func (f failedFuture) Response() any { return nil }

// A write Raft refused before it entered the log is a not-leader error,
// which the forwarder sends to the next leader; one that was in the log
// when leadership went has an unknown outcome.
func TestEntryResultClassifiesRaftErrors(t *testing.T) {
	for _, tc := range []struct {
		raftErr     error
		notLeader   bool
		unknownDone bool
	}{
		{raft.ErrNotLeader, true, false},
		{raft.ErrLeadershipTransferInProgress, true, false},
		{raft.ErrLeadershipLost, true, true},
		{raft.ErrRaftShutdown, false, false},
	} {
		_, err := entryResult(failedFuture{tc.raftErr})
		if got := errors.Is(err, ErrNotLeader); got != tc.notLeader {
			t.Errorf("%v: errors.Is(ErrNotLeader) = %v, want %v (%v)", tc.raftErr, got, tc.notLeader, err)
		}
		if got := errors.Is(err, rpc.ErrUnknownOutcome); got != tc.unknownDone {
			t.Errorf("%v: errors.Is(ErrUnknownOutcome) = %v, want %v (%v)", tc.raftErr, got, tc.unknownDone, err)
		}
	}
}
