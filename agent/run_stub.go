package agent

import (
	"context"
	"errors"
	"log/slog"
)

// Run is a TEMPORARY stub so cmd/cairn compiles; delete this file once the
// real Run exists.
func Run(ctx context.Context, cfg Config, logger *slog.Logger) error {
	return errors.New("not implemented")
}
