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
	// ErrLastVoter is returned by RemoveServer for the only voter left:
	// a configuration without voters can never elect a leader again.
	ErrLastVoter = errors.New("cannot remove the last raft voter")
	// ErrNoPathToDatacenter is returned for a request naming a datacenter
	// other than the server's own: forwarding across datacenters (the WAN
	// router) is not there yet.
	ErrNoPathToDatacenter = errors.New("no path to datacenter")
)
