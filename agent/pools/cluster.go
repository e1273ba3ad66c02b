package pools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// Cluster is the agent's membership as the HTTP API sees it
// (httpapi.Cluster): its pools' members, joins, the datacenters and the
// gossip keyring, and the agent's own leave.
type Cluster struct {
	Pools      *Pools
	Door       door.Door
	Datacenter string
	// ClockSkew is how far a server's clock is ahead, as the agent's rpc
	// pool last measured it calling rpcAddr.
	ClockSkew      func(rpcAddr string) (time.Duration, bool)
	DatacenterList func(ctx context.Context) ([]string, error)
	// LeaveAgent leaves the cluster and then stops the agent.
	LeaveAgent func(ctx context.Context) error
	Logger     *slog.Logger
}

var _ httpapi.Cluster = (*Cluster)(nil)

var errClientNotInWAN = fmt.Errorf("a client agent: %w", httpapi.ErrNotInWAN)

// Members returns the LAN pool's members, and the peers it refused for
// their protocol version (status "incompatible").
func (c *Cluster) Members() []httpapi.Member {
	return c.toHTTP(append(c.Pools.lan.Members(), c.Pools.lan.Incompatible()...), gossip.LAN)
}

// WANMembers returns the WAN pool's members, named "<node>.<dc>", and the
// peers it refused for their protocol version.
func (c *Cluster) WANMembers() ([]httpapi.Member, error) {
	if c.Pools.wan == nil {
		return nil, errClientNotInWAN
	}
	return c.toHTTP(append(c.Pools.wan.Members(), c.Pools.wan.Incompatible()...), gossip.WAN), nil
}

func (c *Cluster) toHTTP(members []gossip.Member, kind gossip.Kind) []httpapi.Member {
	out := make([]httpapi.Member, 0, len(members))
	for _, gm := range members {
		role := "client"
		if gm.IsServer() {
			role = "server"
		}
		name := gm.Node
		if kind == gossip.WAN {
			name = gm.Name
		}
		hm := httpapi.Member{
			Name: name, Addr: gm.Addr.String(), Port: gm.Port, Status: gm.Status.String(),
			Role: role, Datacenter: gm.Datacenter, RPCAddr: gm.RPCAddr, ProtocolVersion: gm.ProtocolVersion,
			ID: gm.ID, Build: gm.Build, ProtocolMin: gm.ProtocolMin, ProtocolMax: gm.ProtocolMax, Refused: gm.Refused,
		}
		if gm.RPCAddr != "" && gm.Status != gossip.StatusIncompatible {
			hm.ClockSkew, hm.ClockSkewKnown = c.ClockSkew(gm.RPCAddr)
		}
		out = append(out, hm)
	}
	return out
}

// Join joins the LAN pool through addrs.
func (c *Cluster) Join(ctx context.Context, addrs []string) (int, error) {
	n, err := c.Pools.lan.Join(ctx, addrs)
	if err == nil {
		c.Logger.Info("joined through the API", "addrs", addrs, "answered", n)
	}
	return n, err
}

// JoinWAN joins the WAN pool through addrs.
func (c *Cluster) JoinWAN(ctx context.Context, addrs []string) (int, error) {
	if c.Pools.wan == nil {
		return 0, errClientNotInWAN
	}
	n, err := c.Pools.wan.Join(ctx, addrs)
	if err == nil {
		c.Logger.Info("joined the WAN pool through the API", "addrs", addrs, "answered", n)
	}
	return n, err
}

// Keyring runs op through the servers (the Keyring endpoint), which run it
// on every pool the key is in; with localOnly it lists this agent's view
// of its LAN pool instead. See httpapi.Cluster for the errors.
func (c *Cluster) Keyring(ctx context.Context, op rpc.KeyringOp, key string, localOnly bool) ([]httpapi.KeyringResponse, error) {
	if localOnly {
		ctx, cancel := context.WithTimeout(ctx, rpc.KeyringPoolTimeout)
		defer cancel()
		r, err := c.Pools.lan.ListKeys(ctx)
		if errors.Is(err, gossip.ErrEncryptionDisabled) {
			return nil, &catalog.FieldError{Field: "encrypt", Reason: err.Error()}
		}
		if err != nil {
			return nil, err
		}
		return []httpapi.KeyringResponse{{Datacenter: c.Datacenter, Keys: r.Keys, PrimaryKeys: r.PrimaryKeys,
			NumNodes: r.NumNodes, Messages: nonEmpty(r.Messages)}}, nil
	}
	var reply rpc.KeyringResponses
	if err := c.Door.RPC(ctx, rpc.MethodKeyringOperation, &rpc.KeyringRequest{Op: op, Key: key}, &reply); err != nil {
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

// keyringError is nil when every pool succeeded; a refusal (nothing
// changed) is a *catalog.FieldError, any other failure wraps
// httpapi.ErrKeyringIncomplete.
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

// Datacenters returns the datacenters the servers know.
func (c *Cluster) Datacenters(ctx context.Context) ([]string, error) { return c.DatacenterList(ctx) }

// Leave leaves the cluster gracefully and stops the agent.
func (c *Cluster) Leave(ctx context.Context) error { return c.LeaveAgent(ctx) }

// ForceLeave makes a failed member leave: in the LAN pool and, on a
// server, as "<node>.<dc>" in the WAN pool (Consul's), or with wan in the
// WAN pool only.
func (c *Cluster) ForceLeave(ctx context.Context, node string, prune, wan bool) error {
	if wan {
		if c.Pools.wan == nil {
			return errClientNotInWAN
		}
		return c.Pools.wan.ForceLeave(ctx, node, prune)
	}
	if err := c.Pools.lan.ForceLeave(ctx, node, prune); err != nil || c.Pools.wan == nil {
		return err
	}
	return c.Pools.wan.ForceLeave(ctx, node+"."+c.Datacenter, prune)
}
