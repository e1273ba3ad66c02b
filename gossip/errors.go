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

	// ErrEncryptionDisabled is returned by the keyring operations of a pool
	// started without a key (no EncryptKey and no keyring file): its
	// members gossip in clear text, and a key cannot be added to such a
	// pool while it runs.
	ErrEncryptionDisabled = errors.New("gossip encryption is not enabled (no encrypt key and no keyring file)")
	// ErrBadKey wraps the reason a gossip key was refused: not base64, or
	// not 16, 24 or 32 bytes once decoded.
	ErrBadKey = errors.New("bad gossip key")
	// ErrKeyNotInstalled is returned by UseKey when the key is missing from
	// this member's keyring or from some alive member's (named in the
	// error): making it primary would cut those members off. Install it
	// first.
	ErrKeyNotInstalled = errors.New("gossip key is not installed")
	// ErrPrimaryKey is returned by RemoveKey for a key that is this
	// member's or some alive member's primary key (named in the error).
	// Make another key primary with UseKey first.
	ErrPrimaryKey = errors.New("gossip key is a primary key")
	// ErrKeyringFull is returned by InstallKey when a keyring already
	// holds MaxKeys keys.
	ErrKeyringFull = errors.New("gossip keyring is full")
	// ErrKeyringIncomplete is returned, with the report, by a keyring
	// operation that this member applied but some alive members did not
	// confirm: the report's Messages say which and why.
	ErrKeyringIncomplete = errors.New("gossip keyring operation not confirmed by every member")
)
