package consensus

import "errors"

var (
	// ErrNotLeader is returned by writes sent to a server that is not the
	// Raft leader.
	ErrNotLeader = errors.New("not the raft leader")
	// ErrNoLeader is returned when no leader is known within the wait.
	ErrNoLeader = errors.New("no raft leader elected")
	// ErrUnknownCommand is returned by the FSM for a log entry it does not
	// know how to apply (written by a newer version).
	ErrUnknownCommand = errors.New("unknown command type")
)
