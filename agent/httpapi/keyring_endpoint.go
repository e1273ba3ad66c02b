package httpapi

import (
	"errors"
	"net/http"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/rpc"
)

// ErrKeyringIncomplete is wrapped by the error of a keyring operation
// that did not complete on every pool: members that did not confirm it, a
// datacenter not reached. Sending it again is safe: the operations are
// idempotent.
var ErrKeyringIncomplete = errors.New("gossip keyring operation incomplete")

// KeyringResponse is the keys of one gossip pool, as Consul's
// /v1/operator/keyring lists them.
type KeyringResponse struct {
	// WAN is true for the WAN pool, false for a LAN pool.
	WAN bool
	// Datacenter is the pool's datacenter (the WAN pool's: that of the
	// server that ran the operation on it).
	Datacenter string
	// Segment and Partition are Consul Enterprise's; always "".
	Segment   string
	Partition string `json:",omitempty"`
	// Messages maps a member to what went wrong with it: an operation it
	// did not confirm, keys the agent does not know.
	Messages map[string]string `json:",omitempty"`
	// Keys maps each key (base64) to how many alive members hold it.
	Keys map[string]int
	// PrimaryKeys maps each key to how many alive members encrypt with it.
	PrimaryKeys map[string]int
	// NumNodes is how many members of the pool are alive.
	NumNodes int
	// NumErrs is how many members failed the operation or did not
	// confirm it (named in Messages); Error is why it failed on the pool
	// as a whole. Neither is Consul's; both are left out when zero.
	NumErrs int    `json:",omitempty"`
	Error   string `json:",omitempty"`
}

// keyringRequest is the body of POST, PUT and DELETE.
type keyringRequest struct {
	Key string
}

// operatorKeyring serves /v1/operator/keyring as Consul does: GET lists
// the keys of every pool (?local-only: the agent's LAN pool as it sees
// it), POST installs the body's Key, PUT makes it primary, DELETE removes
// it, on every pool. The changes answer 200 with the pools after the
// change, as GET lists them (Consul's clients read no body).
func (s *Server) operatorKeyring(w http.ResponseWriter, r *http.Request) error {
	if r.Method == http.MethodGet {
		if err := s.permission(r, "keyring", "read", "", (*acl.Authorizer).KeyringRead); err != nil {
			return err
		}
		out, err := s.cluster.Keyring(r.Context(), rpc.KeyringList, "", boolParam(r, "local-only"))
		if err != nil {
			return err
		}
		writeJSONPretty(w, r, out)
		return nil
	}
	if err := s.permission(r, "keyring", "write", "", (*acl.Authorizer).KeyringWrite); err != nil {
		return err
	}
	var body keyringRequest
	if err := s.decodeBody(w, r, &body); err != nil {
		return err
	}
	if body.Key == "" {
		return badRequest("Key", "is required: the base64 of a 16, 24 or 32 byte key (cairn keygen)")
	}
	// The operations of POST, PUT and DELETE.
	op := map[string]rpc.KeyringOp{http.MethodPost: rpc.KeyringInstall, http.MethodPut: rpc.KeyringUse, http.MethodDelete: rpc.KeyringRemove}[r.Method]
	out, err := s.cluster.Keyring(r.Context(), op, body.Key, false)
	if err != nil {
		return err
	}
	writeJSONPretty(w, r, out)
	return nil
}
