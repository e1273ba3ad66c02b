package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
)

// The gossip keyring as the HTTP API sees it: /v1/operator/keyring is
// served through membership, which the API takes as its Cluster and finds
// to be a Keyring as well. Each pool keeps its keyring in the data dir
// (<data-dir>/gossip/lan.keyring and wan.keyring, Consul's format), so a
// restarted agent comes back with the rotated keys whatever its encrypt
// setting still says; a -dev agent, with no data dir, keeps it in memory.
var _ httpapi.Keyring = membership{}

// keyringTimeout bounds one keyring operation on one pool: every alive
// member has to show the change in its gossip by then, or is reported.
const keyringTimeout = 30 * time.Second

// keyringFile is where the pool of kind keeps its keyring, "" without a
// data dir.
func (a *Agent) keyringFile(kind gossip.Kind) string {
	if a.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(a.cfg.DataDir, "gossip", kind.String()+".keyring")
}

// Keyring lists or changes the gossip keys of this agent's pools: the WAN
// pool first (servers only), then the LAN pool. See httpapi.Keyring.
func (m membership) Keyring(ctx context.Context, op httpapi.KeyringOp, key string) ([]httpapi.KeyringResponse, error) {
	return m.a.Keyring(ctx, op, key)
}

// Keyring applies op with key (base64; "" to list) to each gossip pool of
// the agent, the WAN pool first on a server, then the LAN pool, and
// returns one response per pool, as Consul's keyring API does. Every pool
// is tried even when one fails. Refusals (a bad key, a change that would
// cut members off, no encryption) are *catalog.FieldError naming "Key" or
// "encrypt"; a change some members did not confirm is an error naming them
// per pool, with the responses.
func (a *Agent) Keyring(ctx context.Context, op httpapi.KeyringOp, key string) ([]httpapi.KeyringResponse, error) {
	if op != httpapi.KeyringList {
		if _, err := gossip.ParseKey(key); err != nil {
			return nil, &catalog.FieldError{Field: "Key", Reason: err.Error()}
		}
	}
	type pool struct {
		p    *gossip.Pool
		wan  bool
		name string
	}
	pools := []pool{{a.gossip, false, a.cfg.Datacenter + " (LAN)"}}
	if a.wan != nil {
		pools = []pool{{a.wan, true, "WAN"}, pools[0]}
	}
	var out []httpapi.KeyringResponse
	var refusals, failures []string
	field := "Key"
	for _, pl := range pools {
		r, err := a.keyringOp(ctx, pl.p, op, key)
		out = append(out, httpapi.KeyringResponse{
			WAN: pl.wan, Datacenter: a.cfg.Datacenter, Messages: r.Messages,
			Keys: r.Keys, PrimaryKeys: r.PrimaryKeys, NumNodes: r.NumNodes,
		})
		switch {
		case err == nil:
		case errors.Is(err, gossip.ErrEncryptionDisabled):
			field = "encrypt"
			refusals = append(refusals, pl.name+": "+err.Error())
		case refused(err):
			refusals = append(refusals, pl.name+": "+err.Error())
		default:
			failures = append(failures, pl.name+": "+err.Error())
		}
	}
	switch {
	case len(failures) > 0:
		return out, fmt.Errorf("keyring %s: %s", op, strings.Join(append(failures, refusals...), "; "))
	case len(refusals) > 0:
		return out, &catalog.FieldError{Field: field, Reason: strings.Join(refusals, "; ")}
	}
	if op != httpapi.KeyringList {
		a.logger.Info("gossip keyring changed on every member", "op", string(op), "pools", len(pools))
	}
	return out, nil
}

// keyringOp runs one operation on one pool, within keyringTimeout.
func (a *Agent) keyringOp(ctx context.Context, p *gossip.Pool, op httpapi.KeyringOp, key string) (gossip.KeyringReport, error) {
	ctx, cancel := context.WithTimeout(ctx, keyringTimeout)
	defer cancel()
	switch op {
	case httpapi.KeyringList:
		return p.ListKeys(ctx)
	case httpapi.KeyringInstall:
		return p.InstallKey(ctx, key)
	case httpapi.KeyringUse:
		return p.UseKey(ctx, key)
	case httpapi.KeyringRemove:
		return p.RemoveKey(ctx, key)
	}
	return gossip.KeyringReport{}, &catalog.FieldError{Field: "op", Reason: fmt.Sprintf("unknown keyring operation %q", op)}
}

// refused tells a refusal, with nothing changed, from a failure.
func refused(err error) bool {
	for _, target := range []error{gossip.ErrBadKey, gossip.ErrKeyNotInstalled, gossip.ErrPrimaryKey, gossip.ErrKeyringFull} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
