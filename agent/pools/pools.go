// Package pools runs an agent's gossip pools: the LAN pool (every agent of
// the datacenter) and, on a server, the WAN pool (the servers of every
// datacenter). It builds them, joins them through the configured and the
// remembered members (rejoin.go), floods this datacenter's servers into
// the WAN pool and feeds the WAN router (wan.go), keeps their keyrings in
// the data dir, leaves them gracefully, admits connections to the server
// port by pool membership (peers.go), sends this agent's network
// coordinate to the servers (coordinates.go) and shows the HTTP API the
// members and the gossip keyring (cluster.go).
//
// A server's Pools is built by NewServer, a client's by NewClient: the
// difference is decided there, once.
package pools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/gossip"
)

// leaveTimeout bounds the broadcast of a graceful leave in each pool.
const leaveTimeout = 5 * time.Second

// Config is what the pools are built from.
type Config struct {
	// NodeName, NodeID and Datacenter are the agent's; Build its
	// "<version>:<revision>", gossiped in its metadata.
	NodeName, NodeID, Datacenter, Build string
	// Protocol, when not 0, is the only cairn protocol version the pools
	// speak and accept (config.ProtocolEnv, tests only); 0: this build's.
	Protocol uint8
	// BindAddr is where gossip listens (the ports below); Advertise the
	// address other members reach this agent at, AdvertiseWAN the one
	// other datacenters reach a server at ("": Advertise).
	BindAddr, Advertise, AdvertiseWAN string
	LANPort, WANPort                  int
	// LANTiming and WANTiming are the gossip_lan and gossip_wan blocks,
	// set over the pools' presets.
	LANTiming, WANTiming config.GossipTiming
	// RetainDead is how long a failed member stays known
	// (reconnect_timeout).
	RetainDead         time.Duration
	DisableCoordinates bool
	// EncryptKey is the gossip key (encrypt), nil without encryption.
	EncryptKey []byte
	// DataDir keeps the keyrings and the member snapshots ("": none).
	DataDir string
	// Join and JoinWAN are the addresses joined at start; RetryInterval
	// and RetryMax pace the retries.
	Join, JoinWAN []string
	RetryInterval time.Duration
	RetryMax      int
	// Peers is where the pools are published for the server port's
	// admission, as each starts.
	Peers *Peers
	// OnUserEvent receives the user events gossiped in the LAN pool
	// (gossip.Config.OnUserEvent). nil: none.
	OnUserEvent func(payload []byte)
	// RouteWAN follows the WAN pool for the router of requests to other
	// datacenters until ctx ends (a server's only).
	RouteWAN func(ctx context.Context, wan *gossip.Pool)
}

// Pools are an agent's gossip pools.
type Pools struct {
	cfg    Config
	logger *slog.Logger
	lan    *gossip.Pool
	wan    *gossip.Pool // nil on a client
	// leaving is set once the graceful leave starts: the member snapshot
	// loops stop writing.
	leaving atomic.Bool
}

// NewClient builds a client's LAN pool, which joins nothing yet: Run
// does.
func NewClient(cfg Config, logger *slog.Logger) (*Pools, error) {
	p := &Pools{cfg: cfg, logger: logger}
	if err := p.startLAN(gossip.RoleClient, "", 0); err != nil {
		return nil, err
	}
	return p, nil
}

// NewServer builds a server's WAN pool, then its LAN pool (which gossips
// rpcAddr and the WAN pool's port, where the other servers of its
// datacenter find it). On error what was built is shut down.
func NewServer(cfg Config, rpcAddr string, logger *slog.Logger) (*Pools, error) {
	p := &Pools{cfg: cfg, logger: logger}
	if err := p.startWAN(rpcAddr); err != nil {
		return nil, err
	}
	if err := p.startLAN(gossip.RoleServer, rpcAddr, int(p.wan.LocalMember().Port)); err != nil {
		_ = p.wan.Shutdown()
		return nil, err
	}
	return p, nil
}

// LAN is the LAN pool.
func (p *Pools) LAN() *gossip.Pool { return p.lan }

// WAN is the WAN pool, nil on a client.
func (p *Pools) WAN() *gossip.Pool { return p.wan }

// protocol sets the test-only protocol version on gc, if any.
func (c Config) protocol(gc *gossip.Config) {
	if c.Protocol != 0 {
		gc.ProtocolVersion, gc.ProtocolMin, gc.ProtocolMax = c.Protocol, c.Protocol, c.Protocol
	}
}

// startLAN creates this agent's LAN pool member with role and (for a
// server) the RPC address and WAN port it gossips.
func (p *Pools) startLAN(role gossip.Role, rpcAddr string, wanPort int) error {
	c := p.cfg
	gc := gossip.DefaultLANConfig()
	gc.NodeName, gc.Datacenter, gc.Role = c.NodeName, c.Datacenter, role
	gc.NodeID, gc.Build = c.NodeID, c.Build
	c.protocol(&gc)
	gc.BindAddr, gc.BindPort = c.BindAddr, c.LANPort
	gc.AdvertiseAddr = c.Advertise
	gc.RPCAddr, gc.WANPort = rpcAddr, wanPort
	gc.RetainDead = c.RetainDead
	gc.DisableCoordinates = c.DisableCoordinates
	gc.OnUserEvent = c.OnUserEvent
	setTiming(&gc.Timing, c.LANTiming)
	gc.EncryptKey = c.EncryptKey
	gc.KeyringFile = p.keyringFile(gossip.LAN)
	lan, err := gossip.New(gc, p.logger)
	if err != nil {
		return fmt.Errorf("start LAN gossip: %w", err)
	}
	p.lan = lan
	p.cfg.Peers.lan.Store(lan)
	return nil
}

// setTiming sets the timers of a gossip_lan or gossip_wan block onto t, a
// pool preset's timing; the preset's other timers stay as they are.
func setTiming(t *gossip.Timing, c config.GossipTiming) {
	t.GossipNodes, t.GossipInterval = c.GossipNodes, c.GossipInterval
	t.ProbeInterval, t.ProbeTimeout = c.ProbeInterval, c.ProbeTimeout
	t.RetransmitMult, t.SuspicionMult = c.RetransmitMult, c.SuspicionMult
}

// keyringFile is where the pool of kind keeps its keyring
// (<data-dir>/gossip/lan.keyring and wan.keyring, Consul's format), so a
// restarted agent comes back with the rotated keys whatever its encrypt
// setting still says; "" without a data dir (a -dev agent keeps it in
// memory).
func (p *Pools) keyringFile(kind gossip.Kind) string {
	if p.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(p.cfg.DataDir, "gossip", kind.String()+".keyring")
}

// Run joins the pools (through the configured and the remembered
// members), keeps their member snapshots and, on a server, floods this
// datacenter's servers into the WAN pool and feeds the WAN router, until
// ctx ends; it returns once every loop it started has.
func (p *Pools) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if p.wan != nil {
		// The router is the WAN pool's only reader of its change signal.
		wg.Go(func() { p.cfg.RouteWAN(ctx, p.wan) })
		p.startJoin(ctx, &wg, p.wan, gossip.WAN, p.cfg.JoinWAN, wanSnapshotFile)
		wg.Go(func() { p.floodWAN(ctx) })
	}
	p.startJoin(ctx, &wg, p.lan, gossip.LAN, p.cfg.Join, lanSnapshotFile)
	wg.Wait()
}

// Leave announces this agent's leave in gossip, so the others see it left
// rather than failed (the leader deregisters its node; the other
// datacenters stop routing to a server at once), and forgets the
// remembered members (a left agent rejoins only through -join). The WAN
// pool first: other datacenters stop sending requests to this server
// before it stops answering them; a failure there leaves the server to
// their failure detection, and the LAN leave still matters more.
func (p *Pools) Leave() error {
	p.leaving.Store(true)
	p.forgetMembers()
	if p.wan != nil {
		if err := p.wan.Leave(leaveTimeout); err != nil && !errors.Is(err, gossip.ErrShutdown) {
			p.logger.Warn("leaving the WAN pool", "err", fmt.Errorf("WAN gossip leave: %w", err))
		}
	}
	if err := p.lan.Leave(leaveTimeout); err != nil && !errors.Is(err, gossip.ErrShutdown) {
		return fmt.Errorf("gossip leave: %w", err)
	}
	return nil
}

// Shutdown stops the pools, without leaving.
func (p *Pools) Shutdown() []error {
	errs := []error{p.lan.Shutdown()}
	if p.wan != nil {
		errs = append(errs, p.wan.Shutdown())
	}
	return errs
}

// Addr is this agent's address in pool g, for logs.
func Addr(g *gossip.Pool) string {
	m := g.LocalMember()
	return m.Addr.String() + ":" + strconv.Itoa(int(m.Port))
}
