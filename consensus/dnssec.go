package consensus

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"fmt"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// This file keeps the datacenter's DNSSEC key in Raft: the command that
// sets it (cmdDNSSEC), the leader's duty of storing one, and the Operator
// endpoint's method that hands it to agents. Every agent answers DNS, so
// every agent that signs needs the key; Raft makes every server hold the
// same one, and a key file on one server is enough.

// dnssecRequest is the command that sets the DNSSEC key.
type dnssecRequest struct {
	Key rpc.DNSSECKey
}

// applyDNSSEC stores req's key at index, keeping the first store's
// CreateIndex.
func (f *fsm) applyDNSSEC(index uint64, req *dnssecRequest) any {
	next := req.Key
	next.CreateIndex, next.ModifyIndex = index, index
	if cur := f.dnssec.Load(); cur != nil {
		next.CreateIndex = cur.CreateIndex
	}
	f.dnssec.Store(&next)
	return nil
}

// DNSSECKey returns the DNSSEC key as this server has applied it (sealed,
// when SealedWith says so), nil when none was stored.
func (s *Server) DNSSECKey() *rpc.DNSSECKey {
	k := s.fsm.dnssec.Load()
	if k == nil {
		return nil
	}
	out := *k
	return &out
}

// checkDNSSECKey checks that der is an ECDSA P-256 private key in SEC 1
// DER, the one form stored.
func checkDNSSECKey(der []byte) error {
	k, err := x509.ParseECPrivateKey(der)
	if err != nil {
		return fmt.Errorf("DNSSEC key: %w", err)
	}
	if k.Curve != elliptic.P256() {
		return fmt.Errorf("DNSSEC key: an ECDSA %s key, want P-256 (algorithm 13)", k.Curve.Params().Name)
	}
	return nil
}

// initDNSSEC is the leader's DNSSEC duty, run with every reconcile: with
// a key from a file (keyDER), store it unless it is the one stored (a
// changed file, after a restart or on a new leader, replaces the key: a
// rollover); with auto, make one if none is stored. Otherwise nothing:
// the datacenter signs with whatever key it holds, or none. A stored key
// sealed otherwise than with the current primary sealing key (the gossip
// key changed) is sealed again (dnssec_seal.go).
func (s *Server) initDNSSEC(ctx context.Context, keyDER []byte, auto bool) error {
	cur := s.fsm.dnssec.Load()
	var next rpc.DNSSECKey
	switch {
	case keyDER != nil && (cur == nil || !s.sameKey(cur, keyDER)):
		if err := checkDNSSECKey(keyDER); err != nil {
			return err
		}
		next = rpc.DNSSECKey{Algorithm: rpc.DNSSECAlgorithmECDSAP256, PrivateKey: keyDER}
	case auto && cur == nil:
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("make a DNSSEC key: %w", err)
		}
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return fmt.Errorf("encode the DNSSEC key: %w", err)
		}
		next = rpc.DNSSECKey{Algorithm: rpc.DNSSECAlgorithmECDSAP256, PrivateKey: der, Generated: true}
	case cur != nil:
		reseal, err := s.needsSealing(cur)
		if err != nil || !reseal {
			return err
		}
		if next, err = s.unseal(*cur); err != nil {
			return fmt.Errorf("seal the DNSSEC key with the new gossip key: %w", err)
		}
	default:
		return nil
	}
	sealed, err := s.seal(next)
	if err != nil {
		return err
	}
	return s.setDNSSECKey(ctx, sealed)
}

func (s *Server) setDNSSECKey(ctx context.Context, k rpc.DNSSECKey) error {
	if err := s.apply(ctx, cmdDNSSEC, &dnssecRequest{Key: k}); err != nil {
		return fmt.Errorf("store the DNSSEC key: %w", err)
	}
	return nil
}

// DNSSECKey returns the datacenter's DNSSEC key to an agent that signs
// answers; with ACLs, its token must have node:write on args.Node. It
// never blocks: agents ask again now and then, which is soon enough for a
// key that changes only by an operator's hand.
func (op *Operator) DNSSECKey(ctx context.Context, args *rpc.DNSSECKeyRequest, reply *rpc.DNSSECKeyResponse) error {
	c := op.cat
	ctx, release := c.requestContext(ctx)
	defer release()
	args.MinQueryIndex = 0
	if args.Node == "" {
		return &catalog.FieldError{Field: "Node", Reason: "the asking agent's node is required"}
	}
	if done, err := c.forwardRead(ctx, rpc.MethodOperatorDNSSECKey, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := c.authorize(args.Token)
	if err != nil {
		return err
	}
	if authz != nil && !authz.NodeWrite(args.Node) {
		return denied("node", "write", args.Node)
	}
	reply.Index = 1 // never 0, as every read's
	if k := c.srv.DNSSECKey(); k != nil {
		clear, err := c.srv.unseal(*k)
		if err != nil {
			return err
		}
		reply.Key, reply.Index = &clear, k.ModifyIndex
	}
	reply.KnownLeader = c.srv.Leader() != ""
	reply.LastContact = c.srv.LastContact()
	return nil
}
