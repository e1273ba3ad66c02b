package agent

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/gossip"
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

// followDNSSECKey keeps the resolver signing with the datacenter's DNSSEC
// key: it fetches the key from the servers (which hold it in Raft) and
// hands each new one to the resolver, until ctx ends. Until the first key
// arrives, answers go out unsigned, and a validating resolver that
// expects signatures rejects them; the agent logs why.
func (a *Agent) followDNSSECKey(ctx context.Context) {
	var have uint64 // the ModifyIndex of the key in use
	wait, told := dnssecKeyRetry, false
	for {
		k, err := a.fetchDNSSECKey(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !told {
				a.logger.Warn("fetching the DNSSEC key failed; answers are unsigned until it works", "err", err, "retry_in", wait)
				told = true
			}
		case k == nil:
			if !told {
				a.logger.Warn("the servers hold no DNSSEC key yet; answers are unsigned until the leader stores one (dns_config.dnssec key_file or auto on the servers)", "retry_in", wait)
				told = true
			}
		default:
			wait, told = dnssecKeyRefresh, false
			if k.ModifyIndex == have {
				break
			}
			if err := a.useDNSSECKey(k); err != nil {
				a.logger.Error("the datacenter's DNSSEC key is unusable", "err", err)
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

// fetchDNSSECKey asks a server for the key, with the agent's token.
func (a *Agent) fetchDNSSECKey(ctx context.Context) (*rpc.DNSSECKey, error) {
	ctx, cancel := context.WithTimeout(ctx, dnssecKeyRefresh)
	defer cancel()
	if tok := a.cfg.ACL.AgentToken(); tok != "" {
		ctx = acl.ContextWithToken(ctx, tok)
	}
	args := &rpc.DNSSECKeyRequest{QueryOptions: rpc.QueryOptions{Datacenter: a.cfg.Datacenter, AllowStale: true}, Node: a.cfg.NodeName}
	var reply rpc.DNSSECKeyResponse
	if err := a.door.RPC(ctx, rpc.MethodOperatorDNSSECKey, args, &reply); err != nil {
		return nil, err
	}
	return reply.Key, nil
}

// useDNSSECKey makes the resolver sign with k, and logs the DS record of
// the key, which a parent zone or a validator's trust anchor needs.
func (a *Agent) useDNSSECKey(k *rpc.DNSSECKey) error {
	key, err := x509.ParseECPrivateKey(k.PrivateKey)
	if err != nil {
		return fmt.Errorf("parse the key: %w", err)
	}
	if err := a.dns.SetSigningKey(key); err != nil {
		return err
	}
	ds, err := resolver.DS(a.cfg.Domain, key)
	if err != nil {
		return err
	}
	a.logger.Info("signing DNS answers", "key_tag", ds.KeyTag, "ds", ds.String(), "generated", k.Generated)
	return nil
}

// dnssecLeaderKey returns the key file's key as the leader stores it (SEC
// 1 DER), nil without a key file.
func (a *Agent) dnssecLeaderKey() ([]byte, error) {
	key, err := a.cfg.DNSSECKey()
	if err != nil || key == nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("dns_config.dnssec.key_file: %w", err)
	}
	return der, nil
}

// gossipKeys returns the LAN pool's gossip encryption keys, primary
// first: the servers seal the DNSSEC key with them at rest. None before
// the pool starts (the leader and the endpoint that need them run only
// after it has) or without gossip encryption.
func (a *Agent) gossipKeys() [][]byte {
	if a.gossip == nil {
		return nil
	}
	var out [][]byte
	for _, k := range a.gossip.LocalKeys() {
		if raw, err := gossip.ParseKey(k); err == nil {
			out = append(out, raw)
		}
	}
	return out
}
