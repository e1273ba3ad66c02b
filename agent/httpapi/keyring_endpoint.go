package httpapi

import (
	"context"
	"net/http"
	"slices"

	"github.com/cairndns/cairn/acl"
)

// Keyring lists and changes the gossip encryption keys of the agent's
// pools. It is optional: the Cluster given to New provides it when it has
// this method too (as it provides Snapshots), and without it
// /v1/operator/keyring answers 404. Handlers call it from their own
// goroutines, several at once.
type Keyring interface {
	// Keyring applies op to each gossip pool of the agent, the WAN pool
	// first (servers only), then the LAN pool of its datacenter, and
	// returns one response per pool: for KeyringList what their alive
	// members hold, for the others the same, after the change. key is
	// the base64 key ("" for KeyringList).
	//
	// A change that would cut members off (using a key some member lacks,
	// removing a key some member encrypts with), a bad key, a full
	// keyring, or an agent without gossip encryption is refused with a
	// *catalog.FieldError (naming "Key", or "encrypt"). A change some
	// members did not confirm is another error, naming them.
	Keyring(ctx context.Context, op KeyringOp, key string) ([]KeyringResponse, error)
}

// KeyringOp is one operation on the gossip keyrings.
type KeyringOp string

// The keyring operations: GET, POST, PUT and DELETE /v1/operator/keyring.
const (
	KeyringList    KeyringOp = "list"
	KeyringInstall KeyringOp = "install"
	KeyringUse     KeyringOp = "use"
	KeyringRemove  KeyringOp = "remove"
)

// KeyringResponse is the keys of one gossip pool, as Consul's
// /v1/operator/keyring lists them.
type KeyringResponse struct {
	// WAN is true for the WAN pool, false for a LAN pool.
	WAN bool
	// Datacenter is the agent's datacenter.
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
}

// keyringRequest is the body of POST, PUT and DELETE.
type keyringRequest struct {
	Key string
}

// operatorKeyring serves /v1/operator/keyring as Consul does: GET lists
// the keys of every pool (?local-only: the LAN pool only), POST installs
// the body's Key, PUT makes it primary, DELETE removes it; the changes
// answer 200 with no body.
func (s *Server) operatorKeyring(w http.ResponseWriter, r *http.Request) error {
	kr, ok := s.cluster.(Keyring)
	if !ok {
		return notFound("the gossip keyring is not available on this agent")
	}
	if r.Method == http.MethodGet {
		if err := s.permission(r, "keyring", "read", "", (*acl.Authorizer).KeyringRead); err != nil {
			return err
		}
		out, err := kr.Keyring(r.Context(), KeyringList, "")
		if err != nil {
			return err
		}
		if boolParam(r, "local-only") {
			out = slices.DeleteFunc(out, func(k KeyringResponse) bool { return k.WAN })
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
	op := map[string]KeyringOp{http.MethodPost: KeyringInstall, http.MethodPut: KeyringUse, http.MethodDelete: KeyringRemove}[r.Method]
	if _, err := kr.Keyring(r.Context(), op, body.Key); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}
