package consensus

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// bootstrapPoll is how often a server waiting for its expected peers looks
// at the gossip membership. The leader loop is the only reader of the
// pool's change signal, so the watcher polls the snapshot instead.
const bootstrapPoll = 200 * time.Millisecond

// BootstrapConfig is whom a server bootstraps Raft with.
type BootstrapConfig struct {
	// Expect is how many servers (this one included) to wait for
	// (bootstrap_expect).
	Expect int
	// Datacenter and NodeName are the server's.
	Datacenter, NodeName string
	// Members is the LAN pool, where the servers are found.
	Members interface{ Members() []gossip.Member }
	// Verify, when set, checks another server before it counts (that it
	// holds a server certificate of the datacenter).
	Verify func(ctx context.Context, m gossip.Member) error
	// Caller asks the other servers for their Raft configuration.
	Caller Caller
}

func (cfg BootstrapConfig) verify(ctx context.Context, m gossip.Member) error {
	if cfg.Verify == nil {
		return nil
	}
	return cfg.Verify(ctx, m)
}

// BootstrapWhenReady waits, until ctx ends, for cfg.Expect alive servers
// of its datacenter in gossip, then bootstraps Raft with them. A server that already has
// Raft state, that already knows a leader (it joined a running cluster),
// or one of whose peers has a Raft configuration (a server whose raft
// directory was wiped, among servers of a running cluster) does not: the
// leader adds it as a voter instead. A peer that cannot be asked
// postpones the bootstrap, as in Consul: bootstrapping a second cluster
// next to a running one could overwrite that one's log.
func (s *Server) BootstrapWhenReady(ctx context.Context, cfg BootstrapConfig, logger *slog.Logger) {
	t := time.NewTicker(bootstrapPoll)
	defer t.Stop()
	for {
		if s.Leader() != "" {
			return
		}
		var servers []Peer
		for _, m := range cfg.Members.Members() {
			if m.IsServer() && m.Status == gossip.StatusAlive && m.Datacenter == cfg.Datacenter {
				if m.Node != cfg.NodeName {
					if err := cfg.verify(ctx, m); err != nil {
						logger.Debug("not bootstrapping with a server that failed verification", "peer", m.Node, "err", err)
						continue
					}
				}
				id := cmp.Or(m.ID, m.Node) // a release before node IDs gossips none
				if m.Node == cfg.NodeName {
					id = s.ID()
				}
				servers = append(servers, Peer{ID: id, Address: m.RPCAddr, Voter: true})
			}
		}
		if len(servers) >= cfg.Expect {
			if peers, err := s.Peers(); err == nil && len(peers) > 0 {
				logger.Info("raft already has a configuration; not bootstrapping", "peers", len(peers))
				return
			}
			holder, err := cfg.clusterHolder(ctx, servers, s.ID())
			switch {
			case err != nil:
				logger.Warn("not bootstrapping yet: could not ask every server whether a cluster exists", "err", err)
			case holder != "":
				logger.Info("a server already has a raft configuration; not bootstrapping, waiting for the leader to add this server", "peer", holder)
				return
			default:
				if err := s.BootstrapCluster(servers); err != nil {
					logger.Error("bootstrap failed", "servers", len(servers), "err", err)
				} else {
					logger.Info("bootstrapped the cluster", "servers", len(servers))
				}
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// clusterHolder asks every server of servers but this one (self) for its
// Raft configuration and returns the ID of the first that has one (a
// cluster exists), or "" when none has; an error when one could not be
// asked.
func (cfg BootstrapConfig) clusterHolder(ctx context.Context, servers []Peer, self string) (string, error) {
	args := &rpc.StatusRequest{QueryOptions: rpc.QueryOptions{Datacenter: cfg.Datacenter, AllowStale: true}}
	for _, p := range servers {
		if p.ID == self {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, bootstrapAskTimeout)
		var reply rpc.RaftConfigurationResponse
		err := cfg.Caller.Call(cctx, p.Address, rpc.MethodStatusRaftConfiguration, args, &reply)
		cancel()
		if err != nil {
			return "", fmt.Errorf("ask server %s for its raft configuration: %w", p.ID, err)
		}
		if len(reply.Servers) > 0 {
			return p.ID, nil
		}
	}
	return "", nil
}

// bootstrapAskTimeout bounds each question clusterHolder asks.
const bootstrapAskTimeout = 5 * time.Second
