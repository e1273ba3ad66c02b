package main

import (
	"errors"
	"fmt"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

// agentFlagCategory groups the flags of agentFlags apart from a command's
// own in its help.
const agentFlagCategory = "Agent connection:"

// agentFlags returns the flags of a command that talks to an agent — its
// address, the ACL token and HTTPS — followed by the command's own flags.
// Each call makes new flags: urfave/cli keeps state in them.
func agentFlags(own ...cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{
			Name:     "http-addr",
			Usage:    "`ADDRESS` of the agent's HTTP API: host:port or http(s)://host:port (CAIRN_HTTP_SSL=true makes host:port https)",
			EnvVars:  []string{api.AddressEnv},
			Value:    api.DefaultAddress,
			Category: agentFlagCategory,
		},
		&cli.StringFlag{
			Name:  "token",
			Usage: "`SECRET` ID of the ACL token to make requests with",
			// Never the value in help: it is a secret, and may come from
			// the environment.
			DefaultText: "none: the agent's default token",
			EnvVars:     []string{api.TokenEnv},
			Category:    agentFlagCategory,
		},
		&cli.StringFlag{
			Name:        "ca-file",
			Usage:       "PEM `FILE` of the CA certificates the agent's HTTPS certificate must chain to",
			DefaultText: "the system's",
			EnvVars:     []string{api.CACertEnv},
			Category:    agentFlagCategory,
		},
		&cli.StringFlag{
			Name:     "client-cert",
			Usage:    "PEM `FILE` of the certificate to present to an agent that verifies HTTPS clients (with -client-key)",
			EnvVars:  []string{api.ClientCertEnv},
			Category: agentFlagCategory,
		},
		&cli.StringFlag{
			Name:     "client-key",
			Usage:    "PEM `FILE` of the key of -client-cert",
			EnvVars:  []string{api.ClientKeyEnv},
			Category: agentFlagCategory,
		},
		&cli.StringFlag{
			Name:        "tls-server-name",
			Usage:       "`NAME` the agent's HTTPS certificate must hold, e.g. server.dc1.cluster",
			DefaultText: "the host of -http-addr",
			EnvVars:     []string{api.TLSServerNameEnv},
			Category:    agentFlagCategory,
		},
	}, own...)
}

// configFlags names the flag that sets each field of api.Config, so that
// an error of api.NewClient names what the user typed. Other errors (a bad
// CAIRN_HTTP_SSL) name their variable themselves.
var configFlags = map[string]string{
	"Address":        "-http-addr",
	"Token":          "-token",
	"TLS.CAFile":     "-ca-file",
	"TLS.CertFile":   "-client-cert",
	"TLS.KeyFile":    "-client-key",
	"TLS.ServerName": "-tls-server-name",
}

// newClient returns a client for the agent the flags of agentFlags name.
// The environment is read through api.DefaultConfig, for what has no flag
// (CAIRN_HTTP_SSL); a flag set on the command line or by its variable
// overrides it.
func newClient(c *cli.Context) (*api.Client, error) {
	cfg := api.DefaultConfig()
	for name, field := range map[string]*string{
		"http-addr":       &cfg.Address,
		"token":           &cfg.Token,
		"ca-file":         &cfg.TLS.CAFile,
		"client-cert":     &cfg.TLS.CertFile,
		"client-key":      &cfg.TLS.KeyFile,
		"tls-server-name": &cfg.TLS.ServerName,
	} {
		if c.IsSet(name) {
			*field = c.String(name)
		}
	}
	client, err := api.NewClient(cfg)
	if err != nil {
		if ce, ok := errors.AsType[*api.ConfigError](err); ok && configFlags[ce.Field] != "" {
			return nil, fmt.Errorf("%s: %s", configFlags[ce.Field], ce.Reason)
		}
		return nil, err
	}
	return client, nil
}
