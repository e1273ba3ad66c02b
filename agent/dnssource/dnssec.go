package dnssource

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/internal/clock"
	"github.com/cairndns/cairn/resolver"
	"github.com/cairndns/cairn/rpc"
)

// dnssecKeyRefresh is how often an agent that signs asks the servers for
// the DNSSEC key again: a rollover reaches every agent within it.
const dnssecKeyRefresh = 30 * time.Second

// dnssecKeyRetry is the first wait after a failed or empty fetch; it
// doubles up to dnssecKeyRefresh.
const dnssecKeyRetry = time.Second

// KeyFollower keeps a resolver signing with the datacenter's DNSSEC key,
// which the servers hold in Raft.
type KeyFollower struct {
	cfg KeyFollowerConfig
}

// KeyFollowerConfig is what a KeyFollower asks for and whom it tells.
type KeyFollowerConfig struct {
	// Door reaches the servers; Token returns what the key is asked for
	// with at each fetch (acl.tokens.agent; "" for none).
	Door  door.Door
	Token func() string
	// Datacenter and Node are the agent's; Domain the zone signed, for
	// the DS record logged.
	Datacenter, Node, Domain string
	// Signer is the resolver, which signs with each new key.
	Signer interface {
		SetSigningKey(*resolver.SigningKey) error
	}
	Logger *slog.Logger
}

// NewKeyFollower returns a follower; Run starts it.
func NewKeyFollower(cfg KeyFollowerConfig) *KeyFollower { return &KeyFollower{cfg: cfg} }

// Run fetches the key from the servers and hands each new one to the
// signer, until ctx ends. Until the first key arrives, answers go out
// unsigned, and a validating resolver that expects signatures rejects
// them; it logs why.
func (f *KeyFollower) Run(ctx context.Context) {
	var have uint64 // the ModifyIndex of the key in use
	wait, told := dnssecKeyRetry, false
	for {
		k, err := f.fetch(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !told {
				f.cfg.Logger.Warn("fetching the DNSSEC key failed; answers are unsigned until it works", "err", err, "retry_in", wait)
				told = true
			}
		case k == nil:
			if !told {
				f.cfg.Logger.Warn("the servers hold no DNSSEC key yet; answers are unsigned until the leader stores one (dns_config.dnssec key_file or auto on the servers)", "retry_in", wait)
				told = true
			}
		default:
			wait, told = dnssecKeyRefresh, false
			if k.ModifyIndex == have {
				break
			}
			if err := f.use(k); err != nil {
				f.cfg.Logger.Error("the datacenter's DNSSEC key is unusable", "err", err)
				break
			}
			have = k.ModifyIndex
		}
		if !clock.Sleep(ctx, wait) {
			return
		}
		wait = min(2*wait, dnssecKeyRefresh)
	}
}

// fetch asks a server for the key.
func (f *KeyFollower) fetch(ctx context.Context) (*rpc.DNSSECKey, error) {
	ctx, cancel := context.WithTimeout(ctx, dnssecKeyRefresh)
	defer cancel()
	if tok := f.cfg.Token(); tok != "" {
		ctx = acl.ContextWithToken(ctx, tok)
	}
	args := &rpc.DNSSECKeyRequest{QueryOptions: rpc.QueryOptions{Datacenter: f.cfg.Datacenter, AllowStale: true}, Node: f.cfg.Node}
	var reply rpc.DNSSECKeyResponse
	if err := f.cfg.Door.RPC(ctx, rpc.MethodOperatorDNSSECKey, args, &reply); err != nil {
		return nil, err
	}
	return reply.Key, nil
}

// use makes the signer sign with k, and logs the DS record of the key,
// which a parent zone or a validator's trust anchor needs.
func (f *KeyFollower) use(k *rpc.DNSSECKey) error {
	key, err := x509.ParseECPrivateKey(k.PrivateKey)
	if err != nil {
		return fmt.Errorf("parse the key: %w", err)
	}
	if err := f.cfg.Signer.SetSigningKey(key); err != nil {
		return err
	}
	ds, err := resolver.DS(f.cfg.Domain, key)
	if err != nil {
		return err
	}
	f.cfg.Logger.Info("signing DNS answers", "key_tag", ds.KeyTag, "ds", ds.String(), "generated", k.Generated)
	return nil
}
