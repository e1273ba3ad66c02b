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
	// Datacenter is the answering agent's datacenter.
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
}

// keyringRequest is the body of the keyring changes.
type keyringRequest struct {
	Key string
}

const keyringPath = "/v1/operator/keyring"

// KeyringList lists the gossip keys every pool of the agent holds: one
// entry for the WAN pool (a server) and one for its LAN pool. With
// localOnly, the LAN pool's alone (?local-only).
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
// keyring of every alive member of the agent's pools, for decryption only
// (POST /v1/operator/keyring). A bad key is refused with a *StatusError
// (400, Field "Key"); members that did not confirm are named in a 500.
func (op *Operator) KeyringInstall(ctx context.Context, key string) error {
	return op.keyring(ctx, http.MethodPost, key)
}

// KeyringUse makes key the primary key, the one that encrypts, on every
// alive member (PUT /v1/operator/keyring). It is refused (400) unless every
// member holds the key: install it first.
func (op *Operator) KeyringUse(ctx context.Context, key string) error {
	return op.keyring(ctx, http.MethodPut, key)
}

// KeyringRemove removes key from every alive member (DELETE
// /v1/operator/keyring). It is refused (400) while any member encrypts
// with it: use another key first.
func (op *Operator) KeyringRemove(ctx context.Context, key string) error {
	return op.keyring(ctx, http.MethodDelete, key)
}

func (op *Operator) keyring(ctx context.Context, method, key string) error {
	_, err := op.c.do(ctx, request{method: method, path: keyringPath, body: keyringRequest{Key: key}}, nil)
	return err
}
