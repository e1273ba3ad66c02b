package consensus

import (
	"errors"

	"github.com/cairndns/cairn/rpc"
)

var (
	// ErrNotLeader is returned by writes sent to a server that is not the
	// Raft leader. It is rpc.ErrNotLeader, so it survives the wire.
	ErrNotLeader = rpc.ErrNotLeader
	// ErrNoLeader is returned when no leader is known within the wait. It
	// is rpc.ErrNoLeader, so it survives the wire.
	ErrNoLeader = rpc.ErrNoLeader
	// ErrUnknownCommand is returned by the FSM for a log entry it does not
	// know how to apply (written by a newer version).
	ErrUnknownCommand = errors.New("unknown command type")
	// ErrLastVoter is returned by RemoveServer for the only voter left:
	// a configuration without voters can never elect a leader again.
	ErrLastVoter = errors.New("cannot remove the last raft voter")
	// ErrNoPathToDatacenter is wrapped by the error of a request naming a
	// datacenter this server cannot forward to: none of its servers is
	// alive in the WAN pool (or it is unknown), every server tried failed
	// to answer, or the request came from another datacenter already
	// (requests cross at most one). It is rpc.ErrNoPathToDatacenter, so
	// it survives the wire.
	ErrNoPathToDatacenter = rpc.ErrNoPathToDatacenter
	// ErrUnknownDatacenter is the ErrNoPathToDatacenter of a datacenter
	// not in the WAN pool at all. It is rpc.ErrUnknownDatacenter.
	ErrUnknownDatacenter = rpc.ErrUnknownDatacenter
	// ErrLogUnreadable is returned by New when an entry of the Raft log on
	// disk cannot be read: the server cannot start on that log.
	ErrLogUnreadable = errors.New("the raft log cannot be read")
)
