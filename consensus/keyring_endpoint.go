package consensus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// Keyring is the RPC endpoint of the gossip keyrings. A key is in every
// pool that gossips with it: the LAN pool of each datacenter and the WAN
// pool of all their servers. So an operation, whichever agent it was sent
// to (a client sends it to a server of its own), runs everywhere, as
// Consul's does: the receiving server runs it on the WAN pool and on its
// LAN pool, and sends it on to a server of each other datacenter of the
// WAN pool, which runs it on its own LAN pool; the reply has one entry per
// pool, its failures included.
//
// Every server that receives it checks the token first (keyring:read to
// list, keyring:write to change) and the key next, before anything is
// read or changed. Since each datacenter holds its own ACL data, the
// receiving server asks every other datacenter to check a change before
// it changes any pool: a token refused in one datacenter changes nothing
// anywhere.
//
// Register it on an rpc.Server under rpc.KeyringEndpoint. Operation is
// called by the rpc.Server on a goroutine of its own, with the caller's
// ctx; closing the Catalog endpoint ends it too.
type Keyring struct {
	cat      *Catalog
	lan, wan *gossip.Pool
}

// NewKeyring returns the Keyring endpoint of a server whose Catalog
// endpoint is cat (its token checks, datacenter and router are the
// Keyring's), in the LAN pool lan and the WAN pool wan (nil for a server
// in none: the operation then stays in its datacenter).
func NewKeyring(cat *Catalog, lan, wan *gossip.Pool) (*Keyring, error) {
	if cat == nil || lan == nil {
		return nil, errors.New("consensus Keyring: a Catalog endpoint and a LAN pool are required")
	}
	return &Keyring{cat: cat, lan: lan, wan: wan}, nil
}

// Operation runs args.Op everywhere (or, Forwarded, on this datacenter's
// LAN pool only; CheckOnly, nowhere) and replies with the outcome on each
// pool. It fails as a whole only when it was refused before any pool was
// touched: the token (rpc.ErrPermissionDenied, rpc.ErrACLNotFound), a bad
// request (*catalog.FieldError), or another datacenter refusing it.
func (k *Keyring) Operation(ctx context.Context, args *rpc.KeyringRequest, reply *rpc.KeyringResponses) error {
	ctx, release := k.cat.requestContext(ctx)
	defer release()
	if err := k.authorize(args.Token, args.Op); err != nil {
		return err
	}
	if err := validateKeyringRequest(args); err != nil {
		return err
	}
	dc := k.cat.cfg.Datacenter
	switch {
	case args.CheckOnly:
		return nil
	case args.Forwarded || k.wan == nil:
		reply.Responses = []rpc.KeyringResponse{runKeyringOp(ctx, k.lan, false, dc, args.Op, args.Key)}
		return nil
	}
	others := k.otherDatacenters()
	if args.Op != rpc.KeyringList {
		if err := k.checkEverywhere(ctx, args, others); err != nil {
			return err
		}
	}
	out := make([]rpc.KeyringResponse, 2+len(others))
	var wg sync.WaitGroup
	wg.Go(func() { out[0] = runKeyringOp(ctx, k.wan, true, dc, args.Op, args.Key) })
	wg.Go(func() { out[1] = runKeyringOp(ctx, k.lan, false, dc, args.Op, args.Key) })
	for i, other := range others {
		wg.Go(func() { out[2+i] = k.forward(ctx, args, other) })
	}
	wg.Wait()
	slices.SortStableFunc(out[1:], func(a, b rpc.KeyringResponse) int { return strings.Compare(a.Datacenter, b.Datacenter) })
	reply.Responses = out
	if args.Op != rpc.KeyringList {
		var failed []string
		for _, r := range out {
			if r.Error != "" {
				failed = append(failed, r.Pool())
			}
		}
		k.cat.srv.logger.Info("gossip keyring operation", "op", string(args.Op), "pools", len(out), "failed_pools", strings.Join(failed, ", "))
	}
	return nil
}

// authorize refuses a token without keyring:read (list) or keyring:write.
func (k *Keyring) authorize(token string, op rpc.KeyringOp) error {
	authz, err := k.cat.authorize(token)
	switch {
	case err != nil || authz == nil:
		return err
	case op == rpc.KeyringList && !authz.KeyringRead():
		return denied("keyring", "read", "")
	case op != rpc.KeyringList && !authz.KeyringWrite():
		return denied("keyring", "write", "")
	}
	return nil
}

func validateKeyringRequest(args *rpc.KeyringRequest) error {
	switch args.Op {
	case rpc.KeyringList:
		return nil
	case rpc.KeyringInstall, rpc.KeyringUse, rpc.KeyringRemove:
		if _, err := gossip.ParseKey(args.Key); err != nil {
			return &catalog.FieldError{Field: "Key", Reason: err.Error()}
		}
		return nil
	}
	return &catalog.FieldError{Field: "Op", Reason: fmt.Sprintf("unknown keyring operation %q", args.Op)}
}

// otherDatacenters are the datacenters of the WAN pool but this one.
func (k *Keyring) otherDatacenters() []string {
	if k.cat.cfg.Router == nil {
		return nil
	}
	return slices.DeleteFunc(k.cat.cfg.Router.Datacenters(), func(dc string) bool {
		return strings.EqualFold(dc, k.cat.cfg.Datacenter)
	})
}

// checkEverywhere asks a server of each of dcs whether it would run the
// operation, and returns the first refusal. A datacenter that cannot be
// reached now is not a refusal: the operation reports it on its pool.
func (k *Keyring) checkEverywhere(ctx context.Context, args *rpc.KeyringRequest, dcs []string) error {
	errs := make([]error, len(dcs))
	var wg sync.WaitGroup
	for i, dc := range dcs {
		wg.Go(func() {
			check := *args
			check.CheckOnly = true
			_, errs[i] = k.send(ctx, &check, dc)
		})
	}
	wg.Wait()
	for i, err := range errs {
		_, field := errors.AsType[*catalog.FieldError](err)
		if field || errors.Is(err, rpc.ErrPermissionDenied) || errors.Is(err, rpc.ErrACLNotFound) {
			return fmt.Errorf("datacenter %s refused the keyring %s, so no pool was changed: %w", dcs[i], args.Op, err)
		}
	}
	return nil
}

// forward runs the operation on the LAN pool of datacenter dc, through
// one of its servers, and returns that pool's outcome.
func (k *Keyring) forward(ctx context.Context, args *rpc.KeyringRequest, dc string) rpc.KeyringResponse {
	reply, err := k.send(ctx, args, dc)
	switch {
	case err != nil:
		return rpc.KeyringResponse{Datacenter: dc, Error: err.Error()}
	case len(reply.Responses) != 1:
		return rpc.KeyringResponse{Datacenter: dc, Error: fmt.Sprintf("its server answered %d pools, want its LAN pool", len(reply.Responses))}
	}
	return reply.Responses[0]
}

// send sends a copy of args, marked Forwarded, to a server of dc. The
// operations are idempotent, so a hop that failed is tried on another
// server of dc even when it may have run.
func (k *Keyring) send(ctx context.Context, args *rpc.KeyringRequest, dc string) (*rpc.KeyringResponses, error) {
	fwd := *args
	fwd.Forwarded, fwd.Datacenter, fwd.FromDatacenter = true, dc, ""
	reply := new(rpc.KeyringResponses)
	_, err := k.cat.forwardDC(ctx, rpc.MethodKeyringOperation, dc, &fwd.FromDatacenter, false, &fwd, reply, rpc.KeyringPoolTimeout)
	return reply, err
}

// runKeyringOp runs op on pool p, within rpc.KeyringPoolTimeout, and
// returns its outcome.
func runKeyringOp(ctx context.Context, p *gossip.Pool, wan bool, dc string, op rpc.KeyringOp, key string) rpc.KeyringResponse {
	ctx, cancel := context.WithTimeout(ctx, rpc.KeyringPoolTimeout)
	defer cancel()
	var r gossip.KeyringReport
	var err error
	switch op {
	case rpc.KeyringList:
		r, err = p.ListKeys(ctx)
	case rpc.KeyringInstall:
		r, err = p.InstallKey(ctx, key)
	case rpc.KeyringUse:
		r, err = p.UseKey(ctx, key)
	case rpc.KeyringRemove:
		r, err = p.RemoveKey(ctx, key)
	}
	out := rpc.KeyringResponse{
		WAN: wan, Datacenter: dc, Keys: r.Keys, PrimaryKeys: r.PrimaryKeys,
		NumNodes: r.NumNodes, NumErrs: r.NumErrs, Messages: r.Messages,
	}
	if len(out.Messages) == 0 {
		out.Messages = nil
	}
	if err != nil {
		out.Error = err.Error()
		out.RefusedField = refusedField(err)
	}
	return out
}

// refusedField is the field a refusal that changed nothing names, "" for
// any other error.
func refusedField(err error) string {
	switch {
	case errors.Is(err, gossip.ErrEncryptionDisabled):
		return "encrypt"
	case errors.Is(err, gossip.ErrBadKey), errors.Is(err, gossip.ErrKeyNotInstalled),
		errors.Is(err, gossip.ErrPrimaryKey), errors.Is(err, gossip.ErrKeyringFull):
		return "Key"
	}
	return ""
}
