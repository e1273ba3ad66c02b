package rpc

import "time"

// This file holds the wire types of the Keyring endpoint, which package
// consensus serves: listing and changing the gossip keys of every pool a
// key is in, for the agent's /v1/operator/keyring API, from whichever
// agent the operation is sent to.

// KeyringEndpoint is the name the Keyring endpoint is registered under on
// the Server; its methods are called as "Keyring.<Method>".
const KeyringEndpoint = "Keyring"

// MethodKeyringOperation is the one method of the Keyring endpoint.
const MethodKeyringOperation = KeyringEndpoint + ".Operation"

// KeyringOp is one operation on the gossip keyrings.
type KeyringOp string

// The keyring operations.
const (
	KeyringList    KeyringOp = "list"
	KeyringInstall KeyringOp = "install"
	KeyringUse     KeyringOp = "use"
	KeyringRemove  KeyringOp = "remove"
)

// KeyringPoolTimeout bounds an operation on one pool: every alive member
// has to show the change in its gossip by then, or is reported.
const KeyringPoolTimeout = 30 * time.Second

// KeyringWait is how long the servers may take over one operation, given
// on top of a caller's usual deadline as a blocking query's wait is: the
// pools are changed at once, each within KeyringPoolTimeout, the other
// datacenters' through one hop more.
const KeyringWait = KeyringPoolTimeout + 10*time.Second

// KeyringRequest lists or changes the gossip keys of every pool: sent to
// any server, it is run on the WAN pool and on its datacenter's LAN pool,
// and sent on to a server of every other datacenter of the WAN pool, which
// runs it on its own LAN pool. Listing needs keyring:read, the changes
// keyring:write, checked by every server before it does anything.
// Sending one again is harmless: installing a key held, using the primary
// key, or removing a key not held changes nothing.
type KeyringRequest struct {
	WriteRequest
	Op KeyringOp
	// Key is the base64 key; "" for KeyringList.
	Key string
	// Forwarded is set by the server that runs the operation everywhere,
	// on the copies it sends to the other datacenters: the receiver runs
	// it on its own LAN pool only.
	Forwarded bool
	// CheckOnly asks the receiver only whether it would run the operation
	// (the token may, the key parses): the server that runs it everywhere
	// asks every other datacenter first, so that a token refused in one
	// of them changes no pool anywhere.
	CheckOnly bool
}

func (*KeyringRequest) isIdempotent() {}

// MaxBlockingWait is KeyringWait: not a blocking query, but it may hold
// its caller as long as one.
func (*KeyringRequest) MaxBlockingWait() time.Duration { return KeyringWait }

var (
	_ Blocking   = (*KeyringRequest)(nil)
	_ Idempotent = (*KeyringRequest)(nil)
)

// KeyringResponses is the outcome on every pool, the WAN pool first, then
// each datacenter's LAN pool, by datacenter name.
type KeyringResponses struct {
	Responses []KeyringResponse
}

// KeyringResponse is the outcome of an operation on one pool, in the
// shape of Consul's /v1/operator/keyring entries.
type KeyringResponse struct {
	// WAN is true for the WAN pool, false for Datacenter's LAN pool.
	WAN bool
	// Datacenter is the datacenter of the server that ran the operation.
	Datacenter string
	// Keys maps each key (base64) to how many alive members hold it,
	// PrimaryKeys to how many encrypt with it.
	Keys, PrimaryKeys map[string]int
	// NumNodes is how many members of the pool are alive.
	NumNodes int
	// NumErrs is how many members failed or did not confirm a change;
	// Messages names them and says why (and, for any member, what else is
	// wrong with its keys).
	NumErrs  int
	Messages map[string]string
	// Error is why the operation failed on this pool as a whole: refused
	// before any member was asked, not confirmed by NumErrs members, or
	// the datacenter not reached. "" when it succeeded.
	Error string
	// RefusedField is set when Error is a refusal that changed nothing on
	// the pool, to the field it names: "Key" (a bad key, a change that
	// would cut members off) or "encrypt" (gossip encryption is off).
	RefusedField string
}

// Pool names the pool for people: "WAN" or "dc1 (LAN)".
func (r *KeyringResponse) Pool() string {
	if r.WAN {
		return "WAN"
	}
	return r.Datacenter + " (LAN)"
}
