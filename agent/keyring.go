package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// The gossip keyring as the HTTP API sees it: /v1/operator/keyring is
// served through membership, which the API takes as its Cluster.
// Operations go to the servers (the Keyring
// endpoint), which run them on every pool the key is in, whichever agent
// they were sent to. Each pool keeps its keyring in the data dir
// (agent/pools).

// Keyring lists or changes the gossip keys of every pool. See
// httpapi.Cluster.
func (m membership) Keyring(ctx context.Context, op rpc.KeyringOp, key string, localOnly bool) ([]httpapi.KeyringResponse, error) {
	return m.a.Keyring(ctx, op, key, localOnly)
}

// Keyring applies op with key (base64; "" to list) to every gossip pool
// through the servers: the WAN pool and the LAN pool of every datacenter,
// one response each, as Consul's keyring API answers. With localOnly (a
// list only) it answers from this agent's own view of its LAN pool,
// without asking the servers.
//
// A pool that refused the operation, changing nothing (a bad key, a change
// that would cut members off, no encryption), makes it a
// *catalog.FieldError naming "Key" or "encrypt"; one where it failed
// otherwise (members that did not confirm, a datacenter not reached) an
// error wrapping httpapi.ErrKeyringIncomplete. Either names each pool and
// its members at fault.
func (a *Agent) Keyring(ctx context.Context, op rpc.KeyringOp, key string, localOnly bool) ([]httpapi.KeyringResponse, error) {
	if localOnly {
		ctx, cancel := context.WithTimeout(ctx, rpc.KeyringPoolTimeout)
		defer cancel()
		r, err := a.gossip.ListKeys(ctx)
		if errors.Is(err, gossip.ErrEncryptionDisabled) {
			return nil, &catalog.FieldError{Field: "encrypt", Reason: err.Error()}
		}
		if err != nil {
			return nil, err
		}
		return []httpapi.KeyringResponse{{Datacenter: a.cfg.Datacenter, Keys: r.Keys, PrimaryKeys: r.PrimaryKeys,
			NumNodes: r.NumNodes, Messages: nonEmpty(r.Messages)}}, nil
	}
	var reply rpc.KeyringResponses
	if err := a.door.RPC(ctx, rpc.MethodKeyringOperation, &rpc.KeyringRequest{Op: op, Key: key}, &reply); err != nil {
		return nil, fmt.Errorf("keyring %s: %w", op, err)
	}
	out := make([]httpapi.KeyringResponse, len(reply.Responses))
	for i, r := range reply.Responses {
		out[i] = httpapi.KeyringResponse{
			WAN: r.WAN, Datacenter: r.Datacenter, Messages: r.Messages, Keys: r.Keys, PrimaryKeys: r.PrimaryKeys,
			NumNodes: r.NumNodes, NumErrs: r.NumErrs, Error: r.Error,
		}
	}
	return out, keyringError(op, reply.Responses)
}

// keyringError is the error of an operation whose responses are rs: nil
// when every pool succeeded.
func keyringError(op rpc.KeyringOp, rs []rpc.KeyringResponse) error {
	var refusals, failures []string
	field := ""
	for _, r := range rs {
		switch {
		case r.Error == "":
		case r.RefusedField != "":
			if field == "" || r.RefusedField == "encrypt" {
				field = r.RefusedField
			}
			refusals = append(refusals, r.Pool()+": "+r.Error)
		default:
			failures = append(failures, r.Pool()+": "+r.Error)
		}
	}
	switch {
	case len(failures) > 0:
		return fmt.Errorf("%w: keyring %s failed in %d of %d pools: %s", httpapi.ErrKeyringIncomplete, op,
			len(failures)+len(refusals), len(rs), strings.Join(append(failures, refusals...), "; "))
	case len(refusals) > 0:
		return &catalog.FieldError{Field: field, Reason: strings.Join(refusals, "; ")}
	}
	return nil
}

func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
