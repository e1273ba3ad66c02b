package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
)

// Reloading says how an agent re-reads its configuration: on PUT
// /v1/agent/reload (`cairn reload`) and on SIGHUP. Its zero value reloads
// the TLS certificates only.
type Reloading struct {
	// Load builds the configuration afresh as the agent was started
	// with it (the CLI reads its -config-file and -config-dir again and
	// applies its flags over them). Nil: there is nothing to re-read.
	Load func() (config.Config, error)
	// Level is the level of the agent's logger, which a reload sets to
	// the new log_level. Nil: log_level changes only on restart.
	Level *slog.LevelVar
}

// SetReloading sets how Reload re-reads the configuration.
func (a *Agent) SetReloading(r Reloading) {
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	a.reloading = r
}

// Reload re-reads the configuration and applies what can change while the
// agent runs (config.ReloadKeys: log_level, the services of the config
// files) and the TLS certificates (read again from their files), and logs
// what it applied (INFO) and which changed keys only a restart applies
// (WARN; they keep their running values). A configuration that does not
// load or validate is an error naming the key (a *catalog.FieldError) or
// the file (httpapi.ErrBadConfig), which the HTTP API answers with a 400,
// and changes nothing. Reloads are serialized.
func (a *Agent) Reload() error {
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	var level slog.Level
	var cfg config.Config
	if a.reloading.Load != nil {
		var err error
		cfg, err = a.reloading.Load()
		if err == nil {
			cfg.Normalize()
			if cfg.NodeID == "" {
				cfg.NodeID = a.cfg.NodeID // generated at start, kept in the data dir
			}
			err = cfg.Validate()
		}
		if err != nil {
			return reloadError(err)
		}
		if level, err = config.ParseLogLevel(cfg.LogLevel); err != nil {
			return reloadError(err) // not reached: Validate checked it
		}
	}
	// The certificates first: a reload that fails there changes nothing.
	if err := a.tls.Reload(); err != nil {
		return err
	}
	if a.reloading.Load == nil {
		a.logger.Info("configuration reloaded", "reloaded", "TLS certificates")
		return nil
	}
	if a.local != nil {
		if err := a.local.SetConfigServices(configServices(cfg.Services)); err != nil {
			return reloadError(err)
		}
	}
	if a.reloading.Level != nil {
		a.reloading.Level.Set(level)
	}
	if a.running == nil {
		a.running = &a.cfg
	}
	reloaded, restart := config.Changes(*a.running, cfg)
	if len(restart) > 0 {
		a.logger.Warn("reload: these keys changed but only a restart applies them; keeping the running values", "keys", strings.Join(restart, ", "))
	}
	after := config.Reloaded(*a.running, cfg)
	a.running = &after
	a.logger.Info("configuration reloaded", "reloaded", strings.Join(append(reloaded, "TLS certificates"), ", "), "log_level", after.LogLevel)
	return nil
}

// configServices hands the config file's services to the local state.
func configServices(defs []config.ServiceDefinition) []local.ConfigService {
	out := make([]local.ConfigService, len(defs))
	for i, d := range defs {
		out[i] = local.ConfigService{Service: &d.Service, Checks: d.Checks, Token: d.Token}
	}
	return out
}

// reloadError turns the first *config.FieldError of err into a
// *catalog.FieldError, which the HTTP API answers with a 400 naming the
// field; other errors (a file that does not parse or is missing) wrap
// httpapi.ErrBadConfig, also a 400.
func reloadError(err error) error {
	var fe *config.FieldError
	if errors.As(err, &fe) {
		return fmt.Errorf("reload: %w", &catalog.FieldError{Field: fe.Field, Reason: fe.Reason})
	}
	return fmt.Errorf("reload: %w: %w", httpapi.ErrBadConfig, err)
}
