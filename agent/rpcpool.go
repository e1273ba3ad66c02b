package agent

import (
	"github.com/cairndns/cairn/agent/pools"
	"github.com/cairndns/cairn/rpc"
)

// The agent's pool of connections to the servers: a client's door sends
// through it, a server's leader duties and forwards too.

// newRPCPool makes the agent's pool to the servers, its metrics in the
// agent's registry.
func (a *Agent) newRPCPool() (*rpc.Pool, error) {
	p, err := rpc.NewPool(a.poolConfig(), a.logger)
	if err != nil {
		return nil, err
	}
	if err := a.metrics.Register(p.Collectors()...); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// poolConfig is the rpc pool's configuration: TLS to the servers when
// tls.internal_rpc verifies outgoing connections.
func (a *Agent) poolConfig() rpc.PoolConfig {
	pc := rpc.DefaultPoolConfig()
	pc.SourceAddr = pools.SourceAddr(a.cfg.BindAddr, a.advertise)
	pc.Dial, pc.ClockOffset = a.dialServer, a.clockOffset
	a.tls.SecurePool(&pc)
	return pc
}
