package gossip

import (
	"log/slog"

	"github.com/hashicorp/memberlist"
)

// NewWithTransport is New with memberlist sending through transport, for
// tests that cut the network between pools on loopback.
func NewWithTransport(cfg Config, logger *slog.Logger, transport memberlist.Transport) (*Pool, error) {
	return create(cfg, logger, transport)
}
