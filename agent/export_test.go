package agent

import "context"

// Crash stops a as a killed process would stop: without leaving the
// cluster, so the other members see it fail. Its data dir is left as it
// is, for a restart.
func Crash(ctx context.Context, a *Agent) error {
	a.crashed = true
	return a.Shutdown(ctx)
}
