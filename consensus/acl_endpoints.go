package consensus

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// ACL is the RPC endpoint of ACL tokens and policies, in Consul's shapes:
// bootstrap, policy and token create/read/update/delete/list, and Resolve,
// which tells an agent what a token may do so it can guard its own
// endpoints. Writes go to the leader; reads are answered like the
// Catalog's. Register it under rpc.ACLEndpoint. With ACLs off every method
// fails with rpc.ErrACLDisabled.
type ACL struct {
	cat *Catalog
}

// NewACL returns the ACL endpoint of the server cat serves.
func NewACL(cat *Catalog) *ACL { return &ACL{cat: cat} }

func (a *ACL) enabled() error {
	if !a.cat.cfg.ACL.Enabled {
		return rpc.ErrACLDisabled
	}
	return nil
}

// BootstrapResetFile is the file, in a server's data dir, an operator
// writes the reset index into to allow one more bootstrap: Consul's
// procedure, for a cluster whose management tokens are lost. The leader
// reads it, and removes it once it was used.
const BootstrapResetFile = "acl-bootstrap-reset"

// Bootstrap makes the first management token and answers it with its
// secret: once per cluster, and only while no bootstrap was made. The
// initial management token, when configured, is the bootstrap, made here
// first if the leader has not made it yet. After a bootstrap the refusal
// names the reset index; with that index in the leader's
// BootstrapResetFile one more bootstrap is allowed.
func (a *ACL) Bootstrap(ctx context.Context, args *rpc.ACLBootstrapRequest, reply *rpc.ACLTokenResponse) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.toPrimary(ctx, rpc.MethodACLBootstrap, &args.WriteRequest, args, reply); done {
		return err
	}
	if done, err := a.cat.forward(ctx, rpc.MethodACLBootstrap, &args.Forwarded, args, reply, 0); done {
		return err
	}
	srv := a.cat.srv
	if _, ok := srv.Store().ACLBootstrapped(); !ok {
		// The initial management token, when configured, goes first.
		if err := srv.initACL(ctx); err != nil {
			return fmt.Errorf("initialise ACLs: %w", err)
		}
	}
	// Checked here too, not only by the FSM: a refused caller costs no
	// Raft write.
	var reset uint64
	if done, ok := srv.Store().ACLBootstrapped(); ok {
		reset = a.bootstrapResetIndex()
		if err := catalog.CheckBootstrapReset(done, reset); err != nil {
			return fmt.Errorf("%w: %w", rpc.ErrPermissionDenied, err)
		}
	}
	if err := validateBootstrapSecret(args.Secret); err != nil {
		return err
	}
	accessor, err := acl.NewID()
	if err != nil {
		return err
	}
	secret := args.Secret
	if secret == "" {
		if secret, err = acl.NewID(); err != nil {
			return err
		}
	}
	tok := &catalog.ACLToken{
		AccessorID: accessor, SecretHash: acl.HashSecret(secret),
		Description: "Bootstrap Token (Global Management)", CreateTime: time.Now().UTC(),
	}
	err = srv.apply(ctx, cmdACL, &catalog.ACLRequest{Op: catalog.ACLBootstrap, Token: tok, ResetIndex: reset})
	if errors.Is(err, catalog.ErrACLBootstrapped) {
		return fmt.Errorf("%w: %w", rpc.ErrPermissionDenied, err)
	}
	if err != nil {
		return err
	}
	if reset != 0 {
		path := filepath.Join(srv.cfg.DataDir, BootstrapResetFile)
		if err := os.Remove(path); err != nil {
			srv.logger.Warn("ACL bootstrap reset used, but its file stays; remove it", "path", path, "err", err)
		}
		srv.logger.Info("ACLs bootstrapped again with the reset index", "reset_index", reset)
	}
	return a.answerToken(accessor, secret, reply)
}

func validateBootstrapSecret(secret string) error {
	if secret != "" && !catalog.IsQueryID(secret) {
		return &catalog.FieldError{Field: "BootstrapSecret", Reason: "must be a UUID"}
	}
	return nil
}

// bootstrapResetIndex is the index in this server's BootstrapResetFile, 0
// when there is none (or it holds no index, which is logged).
func (a *ACL) bootstrapResetIndex() uint64 {
	srv := a.cat.srv
	if srv.cfg.DataDir == "" {
		return 0
	}
	path := filepath.Join(srv.cfg.DataDir, BootstrapResetFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			srv.logger.Warn("cannot read the ACL bootstrap reset file", "path", path, "err", err)
		}
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		srv.logger.Warn("the ACL bootstrap reset file holds no index", "path", path, "err", err)
		return 0
	}
	return n
}

// PolicySet creates a policy (an empty ID) or replaces one, after parsing
// its rules: rules that do not parse never enter the log.
func (a *ACL) PolicySet(ctx context.Context, args *rpc.ACLPolicySetRequest, reply *rpc.ACLPolicyResponse) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.toPrimary(ctx, rpc.MethodACLPolicySet, &args.WriteRequest, args, reply); done {
		if err == nil && reply.Policy != nil {
			a.awaitReplica(ctx, func(store *catalog.Store, ws catalog.WatchSet) bool {
				_, p, err := store.ACLPolicy(ws, reply.Policy.ID, false)
				return err != nil || p != nil && p.Rules == reply.Policy.Rules
			})
		}
		return err
	}
	if done, err := a.cat.forward(ctx, rpc.MethodACLPolicySet, &args.Forwarded, args, reply, 0); done {
		return err
	}
	if err := a.requireWrite(args.Token); err != nil {
		return err
	}
	p := args.Policy
	if p.ID == "" {
		id, err := acl.NewID()
		if err != nil {
			return err
		}
		p.ID = id
	} else if _, old, err := a.cat.srv.Store().ACLPolicy(nil, p.ID, false); err != nil {
		return err
	} else if old == nil {
		return fmt.Errorf("policy %q: %w", p.ID, catalog.ErrNotFound)
	}
	if err := catalog.ValidatePolicy(&p); err != nil {
		return err
	}
	if _, err := acl.Parse(p.Rules); err != nil {
		return &catalog.FieldError{Field: "Rules", Reason: err.Error()}
	}
	if err := a.cat.srv.apply(ctx, cmdACL, &catalog.ACLRequest{Op: catalog.ACLPolicySet, Policy: &p}); err != nil {
		return err
	}
	_, stored, err := a.cat.srv.Store().ACLPolicy(nil, p.ID, false)
	reply.Policy = stored
	return err
}

// PolicyDelete deletes a policy; tokens linking to it keep the link, which
// grants nothing.
func (a *ACL) PolicyDelete(ctx context.Context, args *rpc.ACLPolicyDeleteRequest, _ *struct{}) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.toPrimary(ctx, rpc.MethodACLPolicyDelete, &args.WriteRequest, args, &struct{}{}); done {
		return err
	}
	if done, err := a.cat.forward(ctx, rpc.MethodACLPolicyDelete, &args.Forwarded, args, &struct{}{}, 0); done {
		return err
	}
	if err := a.requireWrite(args.Token); err != nil {
		return err
	}
	return a.cat.srv.apply(ctx, cmdACL, &catalog.ACLRequest{Op: catalog.ACLPolicyDelete, Policy: &catalog.ACLPolicy{ID: args.ID}})
}

// PolicyRead returns one policy, by ID or by name.
func (a *ACL) PolicyRead(ctx context.Context, args *rpc.ACLPolicyReadRequest, reply *rpc.ACLPolicyResponse) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.cat.forwardRead(ctx, rpc.MethodACLPolicyRead, &args.QueryOptions, &args.Forwarded, args, reply); done {
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
		idx, p, err := a.cat.srv.Store().ACLPolicy(ws, key, byName)
		if err == nil && p == nil {
			err = fmt.Errorf("policy %q: %w", key, catalog.ErrNotFound)
		}
		reply.Policy = p
		return idx, err
	})
}

// PolicyList returns every policy.
func (a *ACL) PolicyList(ctx context.Context, args *rpc.ACLPolicyListRequest, reply *rpc.ACLPoliciesResponse) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.cat.forwardRead(ctx, rpc.MethodACLPolicyList, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	if err := a.requireRead(args.Token); err != nil {
		return err
	}
	return a.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, ps, err := a.cat.srv.Store().ACLPolicies(ws)
		reply.Policies = ps
		return idx, err
	})
}

// TokenSet creates a token, or updates one (Update), or clones one
// (CloneFrom). Policies and roles may be named by ID or by name. The
// secret is hashed here, on the leader, before the write enters the log;
// on create it is chosen when not given, and the answer carries it. A
// global token is written in the primary datacenter (and replicated from
// there); a local one where it is asked for.
func (a *ACL) TokenSet(ctx context.Context, args *rpc.ACLTokenSetRequest, reply *rpc.ACLTokenResponse) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	store := a.cat.srv.Store()
	if args.CloneFrom != "" {
		_, src, err := store.ACLToken(nil, args.CloneFrom, false)
		if err != nil {
			return err
		}
		if src == nil || src.Expired(time.Now()) {
			if !a.cat.cfg.ACL.secondary(a.cat.cfg.Datacenter) {
				return fmt.Errorf("token %q: %w", args.CloneFrom, catalog.ErrNotFound)
			}
		} else {
			args.Spec = cloneSpec(src, args.Spec.Description)
		}
	}
	if !args.Spec.Local {
		if done, err := a.toPrimary(ctx, rpc.MethodACLTokenSet, &args.WriteRequest, args, reply); done {
			if err == nil && reply.Token != nil && !args.Update {
				a.awaitReplica(ctx, func(store *catalog.Store, ws catalog.WatchSet) bool {
					_, t, err := store.ACLToken(ws, reply.Token.AccessorID, false)
					return err != nil || t != nil
				})
			}
			return err
		}
	}
	if done, err := a.cat.forward(ctx, rpc.MethodACLTokenSet, &args.Forwarded, args, reply, 0); done {
		return err
	}
	if err := a.requireWrite(args.Token); err != nil {
		return err
	}
	tok, secret, err := a.newToken(args)
	if err != nil {
		return err
	}
	if err := a.cat.srv.apply(ctx, cmdACL, &catalog.ACLRequest{Op: catalog.ACLTokenSet, Token: tok}); err != nil {
		return err
	}
	if secret == "" { // an update, by an acl:write holder
		secret = tok.Secret
	}
	return a.answerToken(tok.AccessorID, secret, reply)
}

// cloneSpec is a new token like src: its links, identities, locality and
// expiry, with description (src's when empty).
func cloneSpec(src *catalog.ACLToken, description string) rpc.ACLTokenSpec {
	if description == "" {
		description = src.Description
	}
	return rpc.ACLTokenSpec{
		Description: description, Policies: slices.Clone(src.Policies), Roles: slices.Clone(src.Roles),
		ServiceIdentities: slices.Clone(src.ServiceIdentities), NodeIdentities: slices.Clone(src.NodeIdentities),
		Local: src.Local, ExpirationTime: src.ExpirationTime,
	}
}

// newToken builds the token args writes, validated, and the secret to
// show in the answer ("" on update).
func (a *ACL) newToken(args *rpc.ACLTokenSetRequest) (*catalog.ACLToken, string, error) {
	spec := args.Spec
	store := a.cat.srv.Store()
	links, err := a.resolveLinks(spec.Policies)
	if err != nil {
		return nil, "", err
	}
	roles, err := a.resolveRoleLinks(spec.Roles)
	if err != nil {
		return nil, "", err
	}
	tok := &catalog.ACLToken{
		AccessorID: strings.ToLower(spec.AccessorID), Description: spec.Description, Policies: links, Roles: roles,
		ServiceIdentities: spec.ServiceIdentities, NodeIdentities: spec.NodeIdentities, Local: spec.Local,
	}
	now := time.Now().UTC()
	if args.Update {
		_, old, err := store.ACLToken(nil, tok.AccessorID, false)
		if err != nil {
			return nil, "", err
		}
		if old == nil {
			return nil, "", fmt.Errorf("token %q: %w", spec.AccessorID, catalog.ErrNotFound)
		}
		if spec.SecretID != "" && acl.HashSecret(spec.SecretID) != old.SecretHash {
			return nil, "", &catalog.FieldError{Field: "SecretID", Reason: "cannot be changed"}
		}
		if spec.Local != old.Local {
			return nil, "", &catalog.FieldError{Field: "Local", Reason: "cannot be changed once the token exists"}
		}
		if old.Expired(now) {
			return nil, "", fmt.Errorf("token %q: %w", spec.AccessorID, catalog.ErrNotFound)
		}
		// Consul's rule: the expiry is set once; an update may restate it.
		if spec.ExpirationTTL != 0 || !spec.ExpirationTime.IsZero() && !spec.ExpirationTime.Equal(old.ExpirationTime) {
			return nil, "", &catalog.FieldError{Field: "ExpirationTime", Reason: "cannot be changed once the token exists"}
		}
		tok.SecretHash, tok.Secret, tok.CreateTime, tok.ExpirationTime = old.SecretHash, old.Secret, old.CreateTime, old.ExpirationTime
		return tok, "", catalog.ValidateToken(tok)
	}
	if tok.AccessorID == "" {
		if tok.AccessorID, err = acl.NewID(); err != nil {
			return nil, "", err
		}
	} else if _, old, err := store.ACLToken(nil, tok.AccessorID, false); err != nil {
		return nil, "", err
	} else if old != nil {
		return nil, "", &catalog.FieldError{Field: "AccessorID", Reason: fmt.Sprintf("token %s exists already", tok.AccessorID)}
	}
	secret := spec.SecretID
	if secret == "" {
		if secret, err = acl.NewID(); err != nil {
			return nil, "", err
		}
	} else if !catalog.IsQueryID(secret) {
		return nil, "", &catalog.FieldError{Field: "SecretID", Reason: "must be a UUID"}
	}
	tok.SecretHash, tok.CreateTime = acl.HashSecret(secret), now
	if a.cat.cfg.ACL.TokenSecretsReadable {
		tok.Secret = secret
	}
	if args.CloneFrom != "" {
		tok.ExpirationTime = spec.ExpirationTime
	} else if tok.ExpirationTime, err = a.expiration(spec, now); err != nil {
		return nil, "", err
	}
	return tok, secret, catalog.ValidateToken(tok)
}

// expiration is the ExpirationTime a new token gets from spec (zero:
// never), within the configured bounds, as Consul checks them.
func (a *ACL) expiration(spec rpc.ACLTokenSpec, now time.Time) (time.Time, error) {
	lo, hi := a.cat.cfg.ACL.TokenMinExpirationTTL, a.cat.cfg.ACL.TokenMaxExpirationTTL
	inRange := func(field string, ttl time.Duration) error {
		if ttl < lo || ttl > hi {
			return &catalog.FieldError{Field: field, Reason: fmt.Sprintf("must be between %s and %s from now (acl.token_min_expiration_ttl, acl.token_max_expiration_ttl), got %s", lo, hi, ttl.Round(time.Second))}
		}
		return nil
	}
	switch {
	case spec.ExpirationTTL != 0 && !spec.ExpirationTime.IsZero():
		return time.Time{}, &catalog.FieldError{Field: "ExpirationTTL", Reason: "set ExpirationTTL or ExpirationTime, not both"}
	case spec.ExpirationTTL != 0:
		if spec.ExpirationTTL < 0 {
			return time.Time{}, &catalog.FieldError{Field: "ExpirationTTL", Reason: fmt.Sprintf("must be positive, got %s", spec.ExpirationTTL)}
		}
		if err := inRange("ExpirationTTL", spec.ExpirationTTL); err != nil {
			return time.Time{}, err
		}
		return now.Add(spec.ExpirationTTL), nil
	case !spec.ExpirationTime.IsZero():
		if !spec.ExpirationTime.After(now) {
			return time.Time{}, &catalog.FieldError{Field: "ExpirationTime", Reason: "is in the past"}
		}
		if err := inRange("ExpirationTime", spec.ExpirationTime.Sub(now)); err != nil {
			return time.Time{}, err
		}
		return spec.ExpirationTime.UTC(), nil
	}
	return time.Time{}, nil
}

// resolveLinks turns policy links given by ID or by name into links by ID,
// each one naming a policy that exists.
func (a *ACL) resolveLinks(in []catalog.ACLPolicyLink) ([]catalog.ACLPolicyLink, error) {
	out := make([]catalog.ACLPolicyLink, 0, len(in))
	for i, l := range in {
		key, byName := l.ID, false
		if key == "" {
			key, byName = l.Name, true
		}
		_, p, err := a.cat.srv.Store().ACLPolicy(nil, key, byName)
		if err != nil {
			return nil, err
		}
		if p == nil {
			return nil, &catalog.FieldError{Field: fmt.Sprintf("Policies[%d]", i), Reason: fmt.Sprintf("no policy %q", key)}
		}
		if !slices.ContainsFunc(out, func(l catalog.ACLPolicyLink) bool { return l.ID == p.ID }) { // linked twice: once, as Consul
			out = append(out, catalog.ACLPolicyLink{ID: p.ID})
		}
	}
	return out, nil
}

// resolveRoleLinks turns role links by ID or by name into links by ID,
// each naming a role that exists.
func (a *ACL) resolveRoleLinks(in []catalog.ACLRoleLink) ([]catalog.ACLRoleLink, error) {
	out := make([]catalog.ACLRoleLink, 0, len(in))
	for i, l := range in {
		key, byName := l.ID, false
		if key == "" {
			key, byName = l.Name, true
		}
		_, r, err := a.cat.srv.Store().ACLRole(nil, key, byName)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, &catalog.FieldError{Field: fmt.Sprintf("Roles[%d]", i), Reason: fmt.Sprintf("no role %q", key)}
		}
		if !slices.ContainsFunc(out, func(l catalog.ACLRoleLink) bool { return l.ID == r.ID }) {
			out = append(out, catalog.ACLRoleLink{ID: r.ID})
		}
	}
	return out, nil
}

// TokenDelete deletes a token: a global one in the primary datacenter.
func (a *ACL) TokenDelete(ctx context.Context, args *rpc.ACLTokenDeleteRequest, _ *struct{}) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if _, tok, err := a.cat.srv.Store().ACLToken(nil, args.AccessorID, false); err != nil {
		return err
	} else if tok == nil || !tok.Local {
		if done, err := a.toPrimary(ctx, rpc.MethodACLTokenDelete, &args.WriteRequest, args, &struct{}{}); done {
			if err == nil {
				a.awaitReplica(ctx, func(store *catalog.Store, ws catalog.WatchSet) bool {
					_, t, err := store.ACLToken(ws, args.AccessorID, false)
					return err != nil || t == nil
				})
			}
			return err
		}
	}
	if done, err := a.cat.forward(ctx, rpc.MethodACLTokenDelete, &args.Forwarded, args, &struct{}{}, 0); done {
		return err
	}
	if err := a.requireWrite(args.Token); err != nil {
		return err
	}
	return a.cat.srv.apply(ctx, cmdACL, &catalog.ACLRequest{Op: catalog.ACLTokenDelete, Token: &catalog.ACLToken{AccessorID: args.AccessorID}})
}

// TokenRead returns one token without its secret, or with Self the
// request's own token, with its secret (the caller holds it already).
func (a *ACL) TokenRead(ctx context.Context, args *rpc.ACLTokenReadRequest, reply *rpc.ACLTokenResponse) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.cat.forwardRead(ctx, rpc.MethodACLTokenRead, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	if args.Self {
		res, err := a.cat.acl.resolve(args.Token)
		if err != nil {
			return err
		}
		secret := args.Token
		if res.accessor == catalog.AnonymousTokenID {
			secret = "anonymous"
		}
		return a.answerToken(res.accessor, secret, reply)
	}
	if err := a.requireRead(args.Token); err != nil {
		return err
	}
	if err := a.answerToken(args.AccessorID, "", reply); err != nil {
		return err
	}
	reply.Token.SecretID = a.readableSecret(args.Token, reply.Token.AccessorID)
	return nil
}

// readableSecret is the secret of the token with accessor as a caller
// with secret may read it: kept only with acl.tokens_secret_readable, and
// shown only to acl:write holders, as Consul shows it.
func (a *ACL) readableSecret(caller, accessor string) string {
	if !a.cat.cfg.ACL.TokenSecretsReadable {
		return ""
	}
	if authz, err := a.cat.authorize(caller); err != nil || !aclWrite(authz) {
		return ""
	}
	_, tok, err := a.cat.srv.Store().ACLToken(nil, accessor, false)
	if err != nil || tok == nil {
		return ""
	}
	return tok.Secret
}

// TokenList returns every token, without secrets.
func (a *ACL) TokenList(ctx context.Context, args *rpc.ACLTokenListRequest, reply *rpc.ACLTokensResponse) error {
	ctx, release := a.cat.requestContext(ctx)
	defer release()
	if err := a.enabled(); err != nil {
		return err
	}
	if done, err := a.cat.forwardRead(ctx, rpc.MethodACLTokenList, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	if err := a.requireRead(args.Token); err != nil {
		return err
	}
	match, err := tokenFilter(args)
	if err != nil {
		return err
	}
	showSecrets := false
	if a.cat.cfg.ACL.TokenSecretsReadable {
		authz, err := a.cat.authorize(args.Token)
		showSecrets = err == nil && aclWrite(authz)
	}
	return a.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, toks, err := a.cat.srv.Store().ACLTokens(ws)
		if err != nil {
			return 0, err
		}
		reply.Tokens = make([]*rpc.ACLTokenView, 0, len(toks))
		now := time.Now()
		for _, t := range toks {
			if t.Expired(now) || !match(t) { // an expired one is gone for every purpose, as in Consul
				continue
			}
			secret := ""
			if showSecrets {
				secret = t.Secret
			}
			reply.Tokens = append(reply.Tokens, a.view(t, secret))
		}
		return idx, nil
	})
}

// tokenFilter is the filter of a token list, Consul's: at most one of
// policy, role, service name and auth method.
func tokenFilter(args *rpc.ACLTokenListRequest) (func(*catalog.ACLToken) bool, error) {
	set := 0
	for _, f := range []string{args.Policy, args.Role, args.ServiceName, args.AuthMethod} {
		if f != "" {
			set++
		}
	}
	if set > 1 {
		return nil, &catalog.FieldError{Field: "filter", Reason: "can only filter by one of policy, role, serviceName, or authMethod at a time"}
	}
	switch {
	case args.Policy != "":
		return func(t *catalog.ACLToken) bool {
			return slices.ContainsFunc(t.Policies, func(l catalog.ACLPolicyLink) bool { return strings.EqualFold(l.ID, args.Policy) })
		}, nil
	case args.Role != "":
		return func(t *catalog.ACLToken) bool {
			return slices.ContainsFunc(t.Roles, func(l catalog.ACLRoleLink) bool { return strings.EqualFold(l.ID, args.Role) })
		}, nil
	case args.ServiceName != "":
		return func(t *catalog.ACLToken) bool {
			return slices.ContainsFunc(t.ServiceIdentities, func(s catalog.ACLServiceIdentity) bool { return s.ServiceName == args.ServiceName })
		}, nil
	case args.AuthMethod != "":
		return func(*catalog.ACLToken) bool { return false }, nil // cairn has no auth methods: no token was made by one
	}
	return func(*catalog.ACLToken) bool { return true }, nil
}

// Resolve tells what the request's token may do: the rules of its
// policies. Answered by this server from its own copy, never forwarded:
// an agent asks it for every token its endpoints see.
func (a *ACL) Resolve(ctx context.Context, args *rpc.ACLResolveRequest, reply *rpc.ACLResolveResponse) error {
	_, release := a.cat.requestContext(ctx)
	defer release()
	reply.Enabled = a.cat.cfg.ACL.Enabled
	reply.DefaultAllow = a.cat.cfg.ACL.DefaultAllow
	if !reply.Enabled {
		return nil
	}
	res, err := a.cat.acl.resolve(args.Token)
	if err != nil {
		return err
	}
	reply.AccessorID, reply.Management, reply.Index, reply.ExpirationTime = res.accessor, res.management, res.index, res.expires
	reply.Rules = slices.Clone(res.rules)
	return nil
}

func (a *ACL) requireRead(secret string) error {
	authz, err := a.cat.authorize(secret)
	if err != nil {
		return err
	}
	if !aclRead(authz) {
		return denied("acl", "read", "")
	}
	return nil
}

func (a *ACL) requireWrite(secret string) error {
	authz, err := a.cat.authorize(secret)
	if err != nil {
		return err
	}
	if !aclWrite(authz) {
		return denied("acl", "write", "")
	}
	return nil
}

// answerToken fills reply with the stored token, showing secret (the
// caller's or the new one) when it is not empty.
func (a *ACL) answerToken(accessor, secret string, reply *rpc.ACLTokenResponse) error {
	idx, tok, err := a.cat.srv.Store().ACLToken(nil, accessor, false)
	if err != nil {
		return err
	}
	if tok == nil || tok.Expired(time.Now()) {
		return fmt.Errorf("token %q: %w", accessor, catalog.ErrNotFound)
	}
	reply.Token, reply.Index = a.view(tok, secret), max(idx, 1)
	reply.KnownLeader = a.cat.srv.Leader() != ""
	return nil
}

// view is a stored token as clients see it: policy names filled in.
func (a *ACL) view(t *catalog.ACLToken, secret string) *rpc.ACLTokenView {
	v := &rpc.ACLTokenView{
		AccessorID: t.AccessorID, SecretID: secret, Description: t.Description, Local: t.Local, CreateTime: t.CreateTime, ExpirationTime: t.ExpirationTime, RaftIndex: t.RaftIndex,
		ServiceIdentities: t.ServiceIdentities, NodeIdentities: t.NodeIdentities, Policies: a.policyNames(t.Policies),
	}
	for _, l := range t.Roles {
		name := ""
		if _, r, err := a.cat.srv.Store().ACLRole(nil, l.ID, false); err == nil && r != nil {
			name = r.Name
		}
		v.Roles = append(v.Roles, catalog.ACLRoleLink{ID: l.ID, Name: name})
	}
	return v
}

// policyNames fills in the names of policy links, as they are now.
func (a *ACL) policyNames(links []catalog.ACLPolicyLink) []catalog.ACLPolicyLink {
	var out []catalog.ACLPolicyLink
	for _, l := range links {
		name := ""
		if _, p, err := a.cat.srv.Store().ACLPolicy(nil, l.ID, false); err == nil && p != nil {
			name = p.Name
		}
		out = append(out, catalog.ACLPolicyLink{ID: l.ID, Name: name})
	}
	return out
}
