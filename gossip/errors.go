package gossip

import "errors"

var (
	// ErrShutdown is returned by Join and Leave on a pool that was shut down.
	ErrShutdown = errors.New("gossip pool is shut down")
	// ErrBadMeta wraps every reason member metadata received from the
	// network could not be decoded.
	ErrBadMeta = errors.New("bad member metadata")
	// ErrIncompatiblePeer wraps the reason a peer was refused: another
	// datacenter in the LAN pool, an unsupported protocol version, a client
	// in the WAN pool, or metadata that does not decode. memberlist passes
	// it on as text only: Join's error reads "... incompatible gossip peer:
	// ...", but errors.Is does not see through memberlist.
	ErrIncompatiblePeer = errors.New("incompatible gossip peer")
)
