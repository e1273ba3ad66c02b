package agent

import (
	"context"

	"github.com/cairndns/cairn/catalog"
)

// Crash stops a as a killed process would stop: without leaving the
// cluster, so the other members see it fail. Its data dir is left as it
// is, for a restart.
func Crash(ctx context.Context, a *Agent) error {
	a.crashed = true
	return a.Shutdown(ctx)
}

// RegisterInCatalog writes req to the catalog through a's door, as an
// external registration (a node no agent runs on) would be: tests use it
// for catalog contents neither the leader nor anti-entropy manage.
func RegisterInCatalog(ctx context.Context, a *Agent, req *catalog.RegisterRequest) error {
	return localCatalog{door: a.door, dc: a.cfg.Datacenter}.Register(ctx, req)
}
