package api

import (
	"context"
	"net/http"
	"net/url"
)

// KeyringResponse is the gossip keys of one pool (GET
// /v1/operator/keyring), in Consul's shape.
type KeyringResponse struct {
	// WAN is true for the WAN pool (the servers of every datacenter),
	// false for the LAN pool of Datacenter.
	WAN bool
	// Datacenter is the pool's datacenter (for the WAN pool, that of the
	// server that ran the operation on it).
	Datacenter string
	// Segment and Partition are Consul Enterprise's; always "".
	Segment   string
	Partition string `json:",omitempty"`
	// Messages maps a member to what went wrong with it: an operation it
	// did not confirm, or keys the agent does not know (by fingerprint).
	Messages map[string]string `json:",omitempty"`
	// Keys maps each key (base64) to how many alive members hold it.
	Keys map[string]int
	// PrimaryKeys maps each key to how many alive members encrypt with it.
	PrimaryKeys map[string]int
	// NumNodes is how many members of the pool are alive.
	NumNodes int
	// NumErrs is how many members failed the operation or did not
	// confirm it (Messages names them); Error is why it failed on the
	// pool as a whole ("" when it did not).
	NumErrs int    `json:",omitempty"`
	Error   string `json:",omitempty"`
}

// keyringRequest is the body of the keyring changes.
type keyringRequest struct {
	Key string
}

const keyringPath = "/v1/operator/keyring"

// KeyringList lists the gossip keys of every pool: the WAN pool and the
// LAN pool of each datacenter, whichever agent is asked. With localOnly,
// the agent's own view of its LAN pool (?local-only).
func (op *Operator) KeyringList(ctx context.Context, localOnly bool) ([]*KeyringResponse, error) {
	var query url.Values
	if localOnly {
		query = url.Values{"local-only": {"true"}}
	}
	var out []*KeyringResponse
	if _, err := op.c.do(ctx, request{method: http.MethodGet, path: keyringPath, query: query}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// KeyringInstall adds key (base64, as "cairn keygen" prints it) to the
// keyring of every alive member of every pool, for decryption only (POST
// /v1/operator/keyring), and returns the pools after the change (none from
// an agent that answers without them). A bad key is refused with a
// *StatusError (400, Field "Key"); pools where members did not confirm,
// or that were not reached, are named in a 503.
func (op *Operator) KeyringInstall(ctx context.Context, key string) ([]*KeyringResponse, error) {
	return op.keyring(ctx, http.MethodPost, key)
}

// KeyringUse makes key the primary key, the one that encrypts, on every
// alive member of every pool (PUT /v1/operator/keyring). A pool where some
// member lacks the key refuses it (400): install it first. Otherwise as
// KeyringInstall.
func (op *Operator) KeyringUse(ctx context.Context, key string) ([]*KeyringResponse, error) {
	return op.keyring(ctx, http.MethodPut, key)
}

// KeyringRemove removes key from every alive member of every pool (DELETE
// /v1/operator/keyring). A pool where some member encrypts with it refuses
// it (400): use another key first. Otherwise as KeyringInstall.
func (op *Operator) KeyringRemove(ctx context.Context, key string) ([]*KeyringResponse, error) {
	return op.keyring(ctx, http.MethodDelete, key)
}

func (op *Operator) keyring(ctx context.Context, method, key string) ([]*KeyringResponse, error) {
	var out []*KeyringResponse
	if _, err := op.c.do(ctx, request{method: method, path: keyringPath, body: keyringRequest{Key: key}, emptyOK: true}, &out); err != nil {
		return nil, err
	}
	return out, nil
}
