package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/config"
	"github.com/urfave/cli/v2"
)

func agentCommand() *cli.Command {
	def := config.Default()
	// -config-file and -config-dir fill one list, in the order given,
	// which is the order they are read in (as Consul's).
	sources := &configSources{}
	return &cli.Command{
		Name:      "agent",
		Usage:     "Run a cairn agent",
		UsageText: "cairn agent -dev\ncairn agent -data-dir /var/lib/cairn [-config-file cairn.hcl] [-config-dir /etc/cairn.d] [options]",
		Description: "Runs the agent of this machine: the DNS server, the HTTP API and, with\n" +
			"-server, the catalog. It runs until interrupted (SIGINT or SIGTERM), then\n" +
			"shuts down cleanly. A client leaves the cluster first; a server does not,\n" +
			"so that a restart leaves the Raft configuration as it is (the config\n" +
			"file's leave_on_terminate and skip_leave_on_interrupt change that; \"cairn\n" +
			"leave\" always leaves).\n\n" +
			"Settings are applied in order: the defaults, -dev, each -config-file (HCL,\n" +
			"or JSON when its name ends in .json) and -config-dir (its .hcl and .json\n" +
			"files in name order) in the order given, then the other flags given on\n" +
			"the command line, which win over the files. SIGHUP (or \"cairn reload\")\n" +
			"reads them all again.",
		OnUsageError: onUsageError("cairn agent"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dev", Usage: "development mode: one in-memory server, nothing to configure"},
			&cli.BoolFlag{Name: "server", Usage: "run as a server holding the catalog (implied by -dev)"},
			&cli.GenericFlag{Name: "config-file", Value: sources, Usage: "read settings from an HCL or JSON `FILE`; given more than once, each file in turn (services add up)"},
			&cli.GenericFlag{Name: "config-dir", Value: sources, Usage: "read settings from every .hcl and .json file of `DIR`, in name order; may be repeated, and is read in turn with -config-file"},
			&cli.StringFlag{Name: "node", Usage: "node `NAME` in the catalog and in DNS", DefaultText: "host name"},
			&cli.StringFlag{Name: "node-id", Usage: "node `UUID` of this agent", DefaultText: "generated once, kept in <data-dir>/node-id"},
			&cli.StringFlag{Name: "datacenter", Usage: "`DC` this agent belongs to", Value: def.Datacenter},
			&cli.StringFlag{Name: "domain", Usage: "DNS `ZONE` cairn answers for", Value: def.Domain},
			&cli.StringFlag{Name: "bind", Usage: "`IP` cluster traffic binds to", Value: def.BindAddr},
			&cli.StringFlag{Name: "advertise", Usage: "`IP` other nodes and DNS answers use for this node", DefaultText: "the bind address"},
			&cli.StringFlag{Name: "advertise-wan", Usage: "`IP` servers of other datacenters use for this server; the node's wan address", DefaultText: "the advertise address"},
			&cli.StringFlag{Name: "client", Usage: "`IP` the DNS and HTTP listeners bind to", Value: def.ClientAddr},
			&cli.IntFlag{Name: "dns-port", Usage: "DNS `PORT` (UDP and TCP)", Value: def.Ports.DNS},
			&cli.IntFlag{Name: "http-port", Usage: "HTTP API `PORT` (-1: off, e.g. to serve the API over HTTPS only)", Value: def.Ports.HTTP},
			&cli.IntFlag{Name: "https-port", Usage: "HTTPS API `PORT` (Consul's is 8501; needs tls.https or tls.defaults cert_file and key_file; -1: off)", Value: def.Ports.HTTPS},
			&cli.IntFlag{Name: "dns-tls-port", Usage: "DNS over TLS `PORT` (853 is the standard one; needs tls.dns or tls.defaults cert_file and key_file; -1: off)", Value: def.Ports.DNSTLS},
			&cli.StringFlag{Name: "data-dir", Usage: "`DIR` holding the Raft log, snapshots and local services (required unless -dev)"},
			&cli.StringFlag{Name: "log-level", Usage: "log `LEVEL`: debug, info, warn or error", Value: def.LogLevel},
			&cli.StringFlag{Name: "log-file", Usage: "also log to `PATH` (a directory when it ends in /: cairn.log in it)"},
			&cli.Int64Flag{Name: "log-rotate-bytes", Usage: "rotate the log file once it holds `N` bytes (0: no limit)"},
			&cli.DurationFlag{Name: "log-rotate-duration", Usage: "rotate the log file once it is `DURATION` old", Value: def.LogFile.RotateDuration},
			&cli.IntFlag{Name: "log-rotate-max-files", Usage: "keep `N` rotated log files (0: all; -1: none)"},
			&cli.BoolFlag{Name: "log-json", Usage: "log JSON lines instead of text"},
			&cli.StringSliceFlag{Name: "node-meta", Usage: "node metadata `key=value`, answered as DNS TXT; repeat for several"},
			&cli.StringFlag{Name: "alt-domain", Usage: "a second DNS `ZONE` answered like -domain"},
			&cli.StringSliceFlag{Name: "recursor", Usage: "upstream resolver `IP[:PORT]` for names outside cairn's zones; repeat for several (none: REFUSED)"},
			&cli.IntFlag{Name: "server-port", Usage: "server RPC and Raft `PORT`", Value: def.Ports.Server},
			&cli.IntFlag{Name: "serf-lan-port", Usage: "LAN gossip `PORT` (UDP and TCP)", Value: def.Ports.SerfLAN},
			&cli.IntFlag{Name: "serf-wan-port", Usage: "WAN gossip `PORT` (UDP and TCP) of a server", Value: def.Ports.SerfWAN},
			&cli.IntFlag{Name: "bootstrap-expect", Usage: "bootstrap the Raft cluster once `N` servers have seen each other (requires -server)"},
			&cli.StringSliceFlag{Name: "join", Usage: "gossip `ADDR[:PORT]` of an agent to join, retried until it answers; repeat for several"},
			&cli.StringSliceFlag{Name: "retry-join", Usage: "the same as -join (both may be given; their addresses add up)"},
			&cli.StringSliceFlag{Name: "join-wan", Usage: "WAN gossip `ADDR[:PORT]` of a server (of any datacenter) to join, retried until it answers; repeat for several (requires -server)"},
			&cli.StringSliceFlag{Name: "retry-join-wan", Usage: "the same as -join-wan (both may be given; their addresses add up)"},
			&cli.DurationFlag{Name: "retry-interval", Usage: "wait `DURATION` between join attempts", Value: def.RetryInterval},
			&cli.IntFlag{Name: "retry-max", Usage: "give up joining after `N` attempts (0: never)"},
			&cli.StringFlag{Name: "encrypt", Usage: "base64 gossip encryption `KEY` (16, 24 or 32 bytes)"},
			&cli.BoolFlag{Name: "enable-script-checks", Usage: "allow health checks that run a command (off: anyone reaching the HTTP API could run programs)"},
			&cli.BoolFlag{Name: "enable-debug", Usage: "serve Go's runtime profiles under /debug/pprof/ on the HTTP API (operator:read with ACLs)"},
		},
		Action: runAgent,
	}
}

func runAgent(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q: \"cairn agent\" takes only flags (see \"cairn agent -h\")", c.Args().First())
	}
	cfg, err := agentConfig(c)
	if err != nil {
		return err
	}
	level, err := config.ParseLogLevel(cfg.LogLevel)
	if err != nil { // Validate has checked it; kept for safety
		return err
	}
	// A reload (SIGHUP, PUT /v1/agent/reload) reads the config files and
	// the flags again, and may change the level.
	var lvl slog.LevelVar
	lvl.Set(level)
	logger, closeLog, err := agentLogger(cfg, c.App.ErrWriter, &lvl) // agent_log.go
	if err != nil {
		return err
	}
	defer closeLog()
	rl := agent.Reloading{Load: func() (config.Config, error) { return buildAgentConfig(c) }, Level: &lvl}

	// SIGINT and SIGTERM end ctx with the signal as its cause, which
	// tells the agent whether to leave the cluster (stopCause).
	ctx, cancel := context.WithCancelCause(c.Context)
	defer cancel(nil)
	stopSig := make(chan os.Signal, 1)
	signal.Notify(stopSig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stopSig)

	// SIGHUP reloads the configuration, as it does Consul's.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-stopSig:
				// After the first signal, restore the default handling
				// so a second one ends a shutdown that hangs.
				signal.Stop(stopSig)
				cancel(stopCause(sig))
				return
			case <-hup:
				select {
				case reload <- struct{}{}:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	if err := agent.Run(ctx, cfg, logger, reload, rl); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return nil
}

// stopCause is why the agent stops on sig: agent.ErrInterrupted for
// SIGINT, agent.ErrTerminated for SIGTERM.
func stopCause(sig os.Signal) error {
	if sig == syscall.SIGTERM {
		return agent.ErrTerminated
	}
	return agent.ErrInterrupted
}

// flagForField names the flag that sets a config field, as config.FieldError
// names it ("ports.dns" → "dns-port").
func flagForField(field string) (string, bool) {
	switch field {
	case "node_name":
		return "node", true
	case "bind_addr":
		return "bind", true
	case "advertise_addr":
		return "advertise", true
	case "advertise_addr_wan":
		return "advertise-wan", true
	case "client_addr":
		return "client", true
	case "ports.dns":
		return "dns-port", true
	case "ports.http":
		return "http-port", true
	case "ports.https":
		return "https-port", true
	case "ports.dns_tls":
		return "dns-tls-port", true
	case "ports.server":
		return "server-port", true
	case "ports.serf_lan":
		return "serf-lan-port", true
	case "ports.serf_wan":
		return "serf-wan-port", true
	case "node_id", "datacenter", "domain", "data_dir", "log_level", "alt_domain",
		"bootstrap_expect", "retry_interval", "retry_max", "encrypt",
		"log_file", "log_rotate_bytes", "log_rotate_duration", "log_rotate_max_files":
		return strings.ReplaceAll(field, "_", "-"), true
	}
	if strings.HasPrefix(field, "node_meta") {
		return "node-meta", true
	}
	if strings.HasPrefix(field, "recursors[") {
		return "recursor", true
	}
	if strings.HasPrefix(field, "retry_join_wan") {
		return "join-wan", true
	}
	if strings.HasPrefix(field, "retry_join") {
		return "join", true
	}
	return "", false
}

// agentConfig builds the agent's configuration: defaults, then -dev, then
// the config file, then every flag the user gave (flags win over the file),
// then validation.
func agentConfig(c *cli.Context) (config.Config, error) {
	cfg, err := buildAgentConfig(c)
	if err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, explainConfigError(c, err)
	}
	return cfg, nil
}

// buildAgentConfig is agentConfig without the validation: what a reload
// reads again (the agent validates it, and names the file's keys).
func buildAgentConfig(c *cli.Context) (config.Config, error) {
	cfg := config.Default()
	if c.Bool("dev") {
		cfg.Dev = true
		cfg.Server = true
	}
	for _, path := range configPaths(c) {
		if err := config.LoadPath(path, &cfg); err != nil {
			return cfg, err
		}
	}
	for _, f := range []struct {
		flag string
		dst  *string
	}{
		{"node", &cfg.NodeName}, {"node-id", &cfg.NodeID}, {"datacenter", &cfg.Datacenter}, {"domain", &cfg.Domain},
		{"bind", &cfg.BindAddr}, {"advertise", &cfg.AdvertiseAddr}, {"advertise-wan", &cfg.AdvertiseAddrWAN}, {"client", &cfg.ClientAddr},
		{"data-dir", &cfg.DataDir}, {"log-level", &cfg.LogLevel}, {"alt-domain", &cfg.AltDomain}, {"log-file", &cfg.LogFile.Path},
	} {
		if c.IsSet(f.flag) {
			*f.dst = c.String(f.flag)
		}
	}
	if c.IsSet("node-meta") {
		meta, err := parseMeta("node-meta", c.StringSlice("node-meta"))
		if err != nil {
			return cfg, err
		}
		cfg.NodeMeta = meta
	}
	if c.IsSet("recursor") {
		cfg.Resolver.Recursors = c.StringSlice("recursor")
	}
	if c.IsSet("dns-port") {
		cfg.Ports.DNS = c.Int("dns-port")
	}
	if c.IsSet("http-port") {
		cfg.Ports.HTTP = c.Int("http-port")
	}
	if c.IsSet("https-port") {
		cfg.Ports.HTTPS = c.Int("https-port")
	}
	if c.IsSet("dns-tls-port") {
		cfg.Ports.DNSTLS = c.Int("dns-tls-port")
	}
	if c.IsSet("server") {
		cfg.Server = c.Bool("server")
	}
	applyClusterFlags(c, &cfg)
	if cfg.Dev && !cfg.Server {
		if c.IsSet("server") {
			return cfg, usagef("-server=false cannot be combined with -dev: a dev agent is always a server")
		}
		cfg.Server = true // a config file's "server = false" yields to -dev
	}
	return cfg, nil
}

// applyClusterFlags sets the clustering flags the user gave onto cfg.
func applyClusterFlags(c *cli.Context, cfg *config.Config) {
	if c.IsSet("server-port") {
		cfg.Ports.Server = c.Int("server-port")
	}
	if c.IsSet("serf-lan-port") {
		cfg.Ports.SerfLAN = c.Int("serf-lan-port")
	}
	if c.IsSet("serf-wan-port") {
		cfg.Ports.SerfWAN = c.Int("serf-wan-port")
	}
	if c.IsSet("bootstrap-expect") {
		cfg.BootstrapExpect = c.Int("bootstrap-expect")
	}
	if c.IsSet("join") || c.IsSet("retry-join") {
		cfg.Join = append(c.StringSlice("join"), c.StringSlice("retry-join")...)
	}
	if c.IsSet("join-wan") || c.IsSet("retry-join-wan") {
		cfg.JoinWAN = append(c.StringSlice("join-wan"), c.StringSlice("retry-join-wan")...)
	}
	if c.IsSet("retry-interval") {
		cfg.RetryInterval = c.Duration("retry-interval")
	}
	if c.IsSet("retry-max") {
		cfg.RetryMax = c.Int("retry-max")
	}
	if c.IsSet("enable-script-checks") {
		cfg.EnableScriptChecks = c.Bool("enable-script-checks")
	}
	if c.IsSet("enable-debug") {
		cfg.EnableDebug = c.Bool("enable-debug")
	}
	if c.IsSet("encrypt") {
		cfg.EncryptKey = c.String("encrypt")
	}
	if c.IsSet("log-rotate-bytes") {
		cfg.LogFile.RotateBytes = c.Int64("log-rotate-bytes")
	}
	if c.IsSet("log-rotate-duration") {
		cfg.LogFile.RotateDuration = c.Duration("log-rotate-duration")
	}
	if c.IsSet("log-rotate-max-files") {
		cfg.LogFile.RotateMaxFiles = c.Int("log-rotate-max-files")
	}
	if c.IsSet("log-json") {
		cfg.LogJSON = c.Bool("log-json")
	}
}

// explainConfigError names, for each rejected field, the flag the user gave
// for it, or the flag to use when neither the flag nor a config file set it.
// A field that may come from the file keeps the file's key.
func explainConfigError(c *cli.Context, err error) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		var fe *config.FieldError
		flag, known := "", false
		if errors.As(e, &fe) {
			flag, known = flagForField(fe.Field)
		}
		switch {
		case !known:
			out = append(out, e)
		case c.IsSet(flag):
			// A bad flag value is a usage error, as one that does not
			// parse is (exit 2).
			out = append(out, usagef("-%s: %s", flag, fe.Reason))
		case len(configPaths(c)) == 0:
			out = append(out, fmt.Errorf("-%s: %s", flag, fe.Reason))
		default:
			out = append(out, fmt.Errorf("%s (in %s, or set -%s): %s",
				fe.Field, quoteList(configPaths(c)), flag, fe.Reason))
		}
	}
	return errors.Join(out...)
}

// quoteList quotes each of names, joined with " or ".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, " or ")
}

// configSources is the value of -config-file and -config-dir: both append
// to one list, so that the paths are read in the order given.
type configSources struct{ paths []string }

func (s *configSources) Set(path string) error {
	s.paths = append(s.paths, path)
	return nil
}

func (s *configSources) String() string { return strings.Join(s.paths, ", ") }

// configPaths lists the -config-file and -config-dir paths in the order
// given.
func configPaths(c *cli.Context) []string {
	if s, ok := c.Generic("config-file").(*configSources); ok {
		return s.paths
	}
	return nil
}
