package consensus

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// toPrimary forwards a write of global ACL data (policies, roles, global
// tokens, the bootstrap) to the primary datacenter when this server is in
// another one: the primary holds them, and every other datacenter
// replicates them from it. done reports whether it forwarded.
func (a *ACL) toPrimary(ctx context.Context, method string, w *rpc.WriteRequest, args, reply any) (bool, error) {
	cfg := a.cat.cfg.ACL
	if !cfg.secondary(a.cat.cfg.Datacenter) {
		return false, nil
	}
	return a.cat.forwardDC(ctx, method, cfg.PrimaryDatacenter, &w.FromDatacenter, true, args, reply, 0)
}

// replicaWait bounds how long a write made through a secondary waits for
// the secondary's copy to show it.
const replicaWait = 5 * time.Second

// awaitReplica waits, up to replicaWait or until ctx ends, until this
// datacenter's copy shows what done reports (a global write made through
// it and applied in the primary), so that the caller can use at once,
// here, what it just made or stop using what it just deleted.
func (a *ACL) awaitReplica(ctx context.Context, done func(store *catalog.Store, ws catalog.WatchSet) bool) {
	ctx, cancel := context.WithTimeout(ctx, replicaWait)
	defer cancel()
	store := a.cat.srv.Store()
	for {
		ws := catalog.NewWatchSet()
		if done(store, ws) || ws.WatchCtx(ctx) != nil {
			return
		}
	}
}

// RoleSet creates a role (an empty ID) or replaces one.
func (a *ACL) RoleSet(ctx context.Context, args *rpc.ACLRoleSetRequest, reply *rpc.ACLRoleResponse) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.toPrimary(ctx, rpc.MethodACLRoleSet, &args.WriteRequest, args, reply); done {
		if err == nil && reply.Role != nil {
			a.awaitReplica(ctx, func(store *catalog.Store, ws catalog.WatchSet) bool {
				_, r, err := store.ACLRole(ws, reply.Role.ID, false)
				return err != nil || r != nil && r.Name == reply.Role.Name
			})
		}
		return err
	}
	if done, err := a.cat.forward(ctx, rpc.MethodACLRoleSet, &args.Forwarded, args, reply, 0); done {
		return err
	}
	if err := a.requireWrite(args.Token); err != nil {
		return err
	}
	r := args.Role
	store := a.cat.srv.Store()
	if r.ID == "" {
		id, err := acl.NewID()
		if err != nil {
			return err
		}
		r.ID = id
	} else if _, old, err := store.ACLRole(nil, r.ID, false); err != nil {
		return err
	} else if old == nil {
		return fmt.Errorf("role %q: %w", r.ID, catalog.ErrNotFound)
	}
	links, err := a.resolveLinks(r.Policies)
	if err != nil {
		return err
	}
	r.Policies = links
	if err := catalog.ValidateRole(&r); err != nil {
		return err
	}
	if err := a.cat.srv.apply(ctx, cmdACL, &catalog.ACLRequest{Op: catalog.ACLRoleSet, Role: &r}); err != nil {
		return err
	}
	_, stored, err := store.ACLRole(nil, r.ID, false)
	reply.Role = a.roleView(stored)
	return err
}

// RoleDelete deletes a role; tokens linking to it keep the link, which
// grants nothing.
func (a *ACL) RoleDelete(ctx context.Context, args *rpc.ACLRoleDeleteRequest, _ *struct{}) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.toPrimary(ctx, rpc.MethodACLRoleDelete, &args.WriteRequest, args, &struct{}{}); done {
		return err
	}
	if done, err := a.cat.forward(ctx, rpc.MethodACLRoleDelete, &args.Forwarded, args, &struct{}{}, 0); done {
		return err
	}
	if err := a.requireWrite(args.Token); err != nil {
		return err
	}
	return a.cat.srv.apply(ctx, cmdACL, &catalog.ACLRequest{Op: catalog.ACLRoleDelete, Role: &catalog.ACLRole{ID: args.ID}})
}

// RoleRead returns one role, by ID or by name.
func (a *ACL) RoleRead(ctx context.Context, args *rpc.ACLRoleReadRequest, reply *rpc.ACLRoleResponse) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.cat.forwardRead(ctx, rpc.MethodACLRoleRead, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	if err := a.requireRead(args.Token); err != nil {
		return err
	}
	key, byName := args.ID, false
	if key == "" {
		key, byName = args.Name, true
	}
	return a.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, r, err := a.cat.srv.Store().ACLRole(ws, key, byName)
		if err == nil && r == nil {
			err = fmt.Errorf("role %q: %w", key, catalog.ErrNotFound)
		}
		reply.Role = a.roleView(r)
		return idx, err
	})
}

// RoleList returns every role, or those linking to a policy.
func (a *ACL) RoleList(ctx context.Context, args *rpc.ACLRoleListRequest, reply *rpc.ACLRolesResponse) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.cat.forwardRead(ctx, rpc.MethodACLRoleList, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	if err := a.requireRead(args.Token); err != nil {
		return err
	}
	return a.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, roles, err := a.cat.srv.Store().ACLRoles(ws)
		reply.Roles = make([]*catalog.ACLRole, 0, len(roles))
		for _, r := range roles {
			if args.Policy == "" || slices.ContainsFunc(r.Policies, func(l catalog.ACLPolicyLink) bool { return strings.EqualFold(l.ID, args.Policy) }) {
				reply.Roles = append(reply.Roles, a.roleView(r))
			}
		}
		return idx, err
	})
}

// roleView is a stored role with its policies' names filled in; nil for
// nil.
func (a *ACL) roleView(r *catalog.ACLRole) *catalog.ACLRole {
	if r == nil {
		return nil
	}
	cp := *r
	cp.Policies = a.policyNames(r.Policies)
	return &cp
}

// Replica answers the ACL data a secondary datacenter copies: every
// policy and role, and the global tokens (hashes of their secrets, and
// the secrets only where acl.tokens_secret_readable kept them). It takes
// acl:write, as Consul's replication token does: whoever holds the
// replica can tell what every token may do.
func (a *ACL) Replica(ctx context.Context, args *rpc.ACLReplicaRequest, reply *rpc.ACLReplicaResponse) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.cat.forwardRead(ctx, rpc.MethodACLReplica, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	if err := a.requireWrite(args.Token); err != nil {
		return err
	}
	return a.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		store := a.cat.srv.Store()
		idx, policies, err := store.ACLPolicies(ws)
		if err != nil {
			return 0, err
		}
		_, roles, err := store.ACLRoles(ws)
		if err != nil {
			return 0, err
		}
		_, tokens, err := store.ACLTokens(ws)
		if err != nil {
			return 0, err
		}
		global := make([]*catalog.ACLToken, 0, len(tokens))
		for _, t := range tokens {
			if !t.Local {
				global = append(global, t)
			}
		}
		reply.Replica = catalog.ACLReplica{Index: idx, Policies: policies, Roles: roles, Tokens: global, WithTokens: true}
		return idx, nil
	})
}

// ReplicationStatus answers how this datacenter's ACL replication goes,
// from its leader, which runs it; anyone may ask, as in Consul.
func (a *ACL) ReplicationStatus(ctx context.Context, args *rpc.ACLReplicationStatusRequest, reply *rpc.ACLReplicationStatus) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if done, err := a.cat.forwardRead(ctx, rpc.MethodACLReplicationStatus, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	*reply = a.cat.repl.status()
	return nil
}
