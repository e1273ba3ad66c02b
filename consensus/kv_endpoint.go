package consensus

import (
	"context"
	"fmt"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// KVS is the RPC endpoint of the key/value store (Consul's KVS): writes go
// through Raft like catalog writes, reads are blocking queries like the
// catalog's.
//
// It rides on a Catalog endpoint of the same server, as PreparedQuery
// does, sharing its datacenter, its forwarding to the leader and to other
// datacenters, its blocking limits, its ACL resolver and its lifetime.
// Register it on an rpc.Server under rpc.KVSEndpoint.
//
// With ACLs on, a write needs key:write on its key (a delete-tree needs
// write on every key under its prefix: acl.Authorizer.KeyWritePrefix), a
// Get needs key:read, and a List or ListKeys answers only the keys the
// token may read (Consul's default, without enable_key_list_policy: no
// key:list check).
type KVS struct {
	cat *Catalog
}

// NewKVS returns the KVS endpoint riding on cat.
func NewKVS(cat *Catalog) *KVS { return &KVS{cat: cat} }

// Apply writes or deletes, and returns once the write is committed and
// applied; reply.Result is false for a CAS that did not match.
func (k *KVS) Apply(ctx context.Context, args *rpc.KVSApplyRequest, reply *rpc.KVSApplyResponse) error {
	ctx, release := k.cat.requestContext(ctx)
	defer release()
	if done, err := k.cat.forwardDC(ctx, rpc.MethodKVSApply, args.Datacenter, &args.FromDatacenter, true, args, reply, 0); done {
		return err
	}
	req := &catalog.KVRequest{Op: args.Op, Entry: args.Entry}
	if err := catalog.ValidateKV(req, k.cat.cfg.KVMaxValueSize); err != nil {
		return err
	}
	if done, err := k.cat.forward(ctx, rpc.MethodKVSApply, &args.Forwarded, args, reply, 0); done {
		return err
	}
	authz, err := k.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	if authz != nil {
		key := req.Entry.Key
		if req.Op == catalog.KVDeleteTree {
			if !authz.KeyWritePrefix(key) {
				return denied("key", "write", key)
			}
		} else if !authz.KeyWrite(key) {
			return denied("key", "write", key)
		}
	}
	done, err := k.cat.srv.ApplyKV(ctx, req)
	if err != nil {
		return err
	}
	reply.Result = done
	return nil
}

// Get returns the entry of one key: none when it does not exist.
func (k *KVS) Get(ctx context.Context, args *rpc.KVSGetRequest, reply *rpc.KVSEntriesResponse) error {
	ctx, release := k.cat.requestContext(ctx)
	defer release()
	if args.Key == "" {
		return &catalog.FieldError{Field: "Key", Reason: "is required"}
	}
	if done, err := k.cat.forwardRead(ctx, rpc.MethodKVSGet, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := k.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	if authz != nil && !authz.KeyRead(args.Key) {
		return denied("key", "read", args.Key)
	}
	return k.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, e, err := k.cat.srv.Store().KVGet(ws, args.Key)
		reply.Entries = nil
		if e != nil {
			reply.Entries = []*catalog.KVEntry{e}
		}
		return idx, err
	})
}

// List returns the entries under a prefix that the token may read.
func (k *KVS) List(ctx context.Context, args *rpc.KVSListRequest, reply *rpc.KVSEntriesResponse) error {
	ctx, release := k.cat.requestContext(ctx)
	defer release()
	if done, err := k.cat.forwardRead(ctx, rpc.MethodKVSList, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := k.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	return k.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, all, err := k.cat.srv.Store().KVList(ws, args.Prefix)
		reply.Entries, reply.ResultsFilteredByACLs = all, false
		if authz != nil {
			reply.Entries = make([]*catalog.KVEntry, 0, len(all))
			for _, e := range all {
				if authz.KeyRead(e.Key) {
					reply.Entries = append(reply.Entries, e)
				}
			}
			reply.ResultsFilteredByACLs = len(reply.Entries) < len(all)
		}
		return idx, err
	})
}

// ListKeys returns the keys under a prefix that the token may read, cut
// at the separator (catalog.Store.KVKeys).
func (k *KVS) ListKeys(ctx context.Context, args *rpc.KVSListKeysRequest, reply *rpc.KVSKeysResponse) error {
	ctx, release := k.cat.requestContext(ctx)
	defer release()
	if done, err := k.cat.forwardRead(ctx, rpc.MethodKVSListKeys, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := k.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	return k.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, all, err := k.cat.srv.Store().KVKeys(ws, args.Prefix, args.Separator)
		reply.Keys, reply.ResultsFilteredByACLs = all, false
		if authz != nil {
			reply.Keys = make([]string, 0, len(all))
			for _, key := range all {
				if authz.KeyRead(key) {
					reply.Keys = append(reply.Keys, key)
				}
			}
			reply.ResultsFilteredByACLs = len(reply.Keys) < len(all)
		}
		return idx, err
	})
}

// ApplyKV writes req through Raft and reports whether it was done (false:
// a CAS that did not match). It does not validate req: the KVS endpoint
// does (catalog.ValidateKV).
func (s *Server) ApplyKV(ctx context.Context, req *catalog.KVRequest) (bool, error) {
	resp, err := s.applyResponse(ctx, cmdKV, req)
	if err != nil {
		return false, fmt.Errorf("%s key %q: %w", req.Op, req.Entry.Key, err)
	}
	done, _ := resp.(bool)
	return done, nil
}
