package config

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/tlsutil"
)

// ACL is the acl block: tokens and policies, enforced by the servers.
type ACL struct {
	// Enabled turns ACLs on (acl.enabled). Every server and client of a
	// datacenter must agree. Default false, as in -dev.
	Enabled bool
	// DefaultPolicy is what a token may do where no rule of its policies
	// says (acl.default_policy): "deny" or "allow". Default "deny", the
	// secure choice; Consul's default is "allow".
	DefaultPolicy string
	// TokenTTL is how long an agent keeps what a token may do before it
	// asks the servers again, for the endpoints it answers itself
	// (acl.token_ttl). The servers always check against their current
	// data. Default 30s, Consul's.
	TokenTTL time.Duration
	// TokenMinExpirationTTL and TokenMaxExpirationTTL bound the lifetime
	// of a token created with ExpirationTTL or ExpirationTime
	// (acl.token_min_expiration_ttl, acl.token_max_expiration_ttl).
	// Servers only. Defaults 1m and 24h, Consul's.
	TokenMinExpirationTTL time.Duration
	TokenMaxExpirationTTL time.Duration
	// Tokens are the agent's own tokens (acl.tokens).
	Tokens ACLTokens
	// EnableTokenPersistence keeps the tokens set through PUT
	// /v1/agent/token/<kind> in <data_dir>/acl-tokens.json, where they
	// replace the configured ones at the next start
	// (acl.enable_token_persistence, Consul's). Default false: a restart
	// goes back to the configured tokens.
	EnableTokenPersistence bool
	// PrimaryDatacenter is the datacenter that holds the policies, roles
	// and global tokens, which every other one replicates
	// (primary_datacenter, Consul's top-level key; acl.primary_datacenter
	// too). Default "": this agent's own datacenter, no replication.
	PrimaryDatacenter string
	// EnableTokenReplication makes a secondary datacenter replicate global
	// tokens, not only policies and roles (acl.enable_token_replication).
	// Default true, unlike Consul's false: cairn's servers resolve tokens
	// only from their own copy, so without it a global token works only in
	// the primary.
	EnableTokenReplication bool
	// DownPolicy is what a secondary datacenter's servers do with global
	// tokens once replication from the primary has failed for longer than
	// TokenTTL (acl.down_policy): "extend-cache" (default, Consul's) and
	// "async-cache" keep using the last copy, "deny" refuses them, "allow"
	// allows everything but managing ACLs. Local tokens keep working.
	DownPolicy string
	// TokensSecretReadable keeps each new token's secret in clear on the
	// servers, so that acl:write holders read it back on token read and
	// list, as Consul does (acl.tokens_secret_readable). Default false:
	// the servers keep only a hash of each secret, so a leaked snapshot,
	// Raft log or backup holds no working token; a secret is shown once,
	// when its token is made (and to its own holder).
	TokensSecretReadable bool
}

// TokenMap is the configured tokens by their kind (package agent/tokens).
func (a ACL) TokenMap() map[string]string {
	return map[string]string{"default": a.Tokens.Default, "agent": a.Tokens.Agent, "dns": a.Tokens.DNS}
}

// TokenFile is where tokens set at runtime persist in dataDir; "" when
// they do not.
func (a ACL) TokenFile(dataDir string) string {
	if !a.EnableTokenPersistence || dataDir == "" {
		return ""
	}
	return filepath.Join(dataDir, "acl-tokens.json")
}

// ACLTokens are the tokens an agent is configured with.
type ACLTokens struct {
	// InitialManagement is the secret ID (a UUID) of a management token
	// the servers create when they first lead with ACLs on, so a cluster
	// can be set up without `cairn acl bootstrap` (Consul's
	// initial_management). Servers only. Default none.
	InitialManagement string
	// Agent is the token the agent registers its node and syncs its
	// services with when they were registered without one
	// (acl.tokens.agent). Default: Default.
	Agent string
	// Default is the token of requests that carry none (acl.tokens.default),
	// DNS questions too when DNS is not set. Default none: the anonymous
	// token.
	Default string
	// DNS is the token the agent reads with to answer DNS (acl.tokens.dns,
	// Consul's): its cache's fills and change feeds, and its lookups of
	// nodes, addresses and prepared queries. So DNS answers under
	// default_policy "deny" with a token that reads services, nodes (and
	// prepared queries) while the anonymous token reads nothing over HTTP.
	// Default: Default.
	DNS string
	// Replication is the token a secondary datacenter's servers replicate
	// the primary's ACL data with (acl.tokens.replication): it needs
	// acl:write in the primary. Servers only. Default none.
	Replication string
}

// DefaultACL returns the defaults documented on ACL.
func DefaultACL() ACL {
	// The expiration bounds are consensus.DefaultACLConfig's (this
	// package may not import consensus): Consul's 1m and 24h.
	// The replication defaults are consensus.DefaultACLConfig's too.
	return ACL{DefaultPolicy: "deny", TokenTTL: 30 * time.Second,
		TokenMinExpirationTTL: time.Minute, TokenMaxExpirationTTL: 24 * time.Hour,
		EnableTokenReplication: true, DownPolicy: "extend-cache"}
}

// fileACL is the acl block of a config file.
type fileACL struct {
	Enabled                *bool          `hcl:"enabled"`
	DefaultPolicy          *string        `hcl:"default_policy"`
	TokenTTL               *string        `hcl:"token_ttl"`
	TokenMinTTL            *string        `hcl:"token_min_expiration_ttl"`
	TokenMaxTTL            *string        `hcl:"token_max_expiration_ttl"`
	Tokens                 *fileACLTokens `hcl:"tokens"`
	Persistence            *bool          `hcl:"enable_token_persistence"`
	PrimaryDatacenter      *string        `hcl:"primary_datacenter"`
	EnableTokenReplication *bool          `hcl:"enable_token_replication"`
	DownPolicy             *string        `hcl:"down_policy"`
	TokensSecretReadable   *bool          `hcl:"tokens_secret_readable"`
}

type fileACLTokens struct {
	InitialManagement *string `hcl:"initial_management"`
	Agent             *string `hcl:"agent"`
	Default           *string `hcl:"default"`
	DNS               *string `hcl:"dns"`
	Replication       *string `hcl:"replication"`
}

func (f *fileACL) apply(a *ACL) error {
	setIf(&a.Enabled, f.Enabled)
	setIf(&a.DefaultPolicy, f.DefaultPolicy)
	setIf(&a.EnableTokenPersistence, f.Persistence)
	setIf(&a.PrimaryDatacenter, f.PrimaryDatacenter)
	setIf(&a.EnableTokenReplication, f.EnableTokenReplication)
	setIf(&a.DownPolicy, f.DownPolicy)
	setIf(&a.TokensSecretReadable, f.TokensSecretReadable)
	for _, d := range []struct {
		field string
		in    *string
		out   *time.Duration
	}{
		{"acl.token_ttl", f.TokenTTL, &a.TokenTTL},
		{"acl.token_min_expiration_ttl", f.TokenMinTTL, &a.TokenMinExpirationTTL},
		{"acl.token_max_expiration_ttl", f.TokenMaxTTL, &a.TokenMaxExpirationTTL},
	} {
		if d.in == nil {
			continue
		}
		v, err := time.ParseDuration(*d.in)
		if err != nil {
			return &FieldError{Field: d.field, Reason: fmt.Sprintf("%q is not a duration such as \"30s\"", *d.in)}
		}
		*d.out = v
	}
	if t := f.Tokens; t != nil {
		setIf(&a.Tokens.InitialManagement, t.InitialManagement)
		setIf(&a.Tokens.Agent, t.Agent)
		setIf(&a.Tokens.Default, t.Default)
		setIf(&a.Tokens.DNS, t.DNS)
		setIf(&a.Tokens.Replication, t.Replication)
	}
	return nil
}

// validateACL reports the bad fields of the acl block.
func (c *Config) validateACL(bad func(field, format string, args ...any)) {
	a := c.ACL
	if a.DefaultPolicy != "allow" && a.DefaultPolicy != "deny" {
		bad("acl.default_policy", "must be \"allow\" or \"deny\", got %q", a.DefaultPolicy)
	}
	switch a.DownPolicy {
	case "extend-cache", "async-cache", "deny", "allow":
	default:
		bad("acl.down_policy", "must be \"extend-cache\", \"async-cache\", \"deny\" or \"allow\", got %q", a.DownPolicy)
	}
	if pdc := a.PrimaryDatacenter; pdc != "" {
		if r := labelProblem(pdc); r != "" {
			bad("primary_datacenter", "%q %s", pdc, r)
		}
	}
	if a.Tokens.Replication != "" && !c.Server && !c.Dev {
		bad("acl.tokens.replication", "is read by servers only; this agent is a client")
	}
	if a.TokenTTL < 0 {
		bad("acl.token_ttl", "must not be negative, got %s", a.TokenTTL)
	}
	if a.TokenMinExpirationTTL <= 0 {
		bad("acl.token_min_expiration_ttl", "must be positive, got %s", a.TokenMinExpirationTTL)
	}
	if a.TokenMaxExpirationTTL < a.TokenMinExpirationTTL {
		bad("acl.token_max_expiration_ttl", "must be at least acl.token_min_expiration_ttl (%s), got %s", a.TokenMinExpirationTTL, a.TokenMaxExpirationTTL)
	}
	if t := a.Tokens.InitialManagement; t != "" {
		if !catalog.IsQueryID(t) { // the UUID form
			bad("acl.tokens.initial_management", "must be a UUID (as `cairn acl` and uuidgen print), got something else")
		}
		if !c.Server && !c.Dev {
			bad("acl.tokens.initial_management", "is read by servers only; this agent is a client")
		}
	}
}

// TLS is the tls block (Consul 1.12+'s shape): a defaults block, and
// internal_rpc, https and dns blocks whose keys override it for the server
// port (RPC and Raft), for the HTTPS API (DNS over HTTPS included) and for
// DNS over TLS. The dns block is cairn's own: Consul serves no encrypted
// DNS.
type TLS struct {
	// RPC secures the server port between agents and servers and between
	// servers, Raft included. Datacenter and Domain are set by the agent.
	RPC tlsutil.Config
	// HTTPS secures the HTTPS API on ports.https.
	HTTPS tlsutil.Config
	// DNS secures DNS over TLS on ports.dns_tls.
	DNS tlsutil.Config
}

// fileTLSBlock is one block of the tls block.
type fileTLSBlock struct {
	CAFile               *string `hcl:"ca_file"`
	CertFile             *string `hcl:"cert_file"`
	KeyFile              *string `hcl:"key_file"`
	VerifyIncoming       *bool   `hcl:"verify_incoming"`
	VerifyOutgoing       *bool   `hcl:"verify_outgoing"`
	VerifyServerHostname *bool   `hcl:"verify_server_hostname"`
	MinVersion           *string `hcl:"tls_min_version"`
}

type fileTLS struct {
	Defaults    *fileTLSBlock `hcl:"defaults"`
	InternalRPC *fileTLSBlock `hcl:"internal_rpc"`
	HTTPS       *fileTLSBlock `hcl:"https"`
	DNS         *fileTLSBlock `hcl:"dns"`
}

func (b *fileTLSBlock) apply(c *tlsutil.Config) {
	if b == nil {
		return
	}
	setIf(&c.CAFile, b.CAFile)
	setIf(&c.CertFile, b.CertFile)
	setIf(&c.KeyFile, b.KeyFile)
	setIf(&c.VerifyIncoming, b.VerifyIncoming)
	setIf(&c.VerifyOutgoing, b.VerifyOutgoing)
	setIf(&c.VerifyServerHostname, b.VerifyServerHostname)
	setIf(&c.MinVersion, b.MinVersion)
}

// apply sets the defaults on both, then each block's own keys.
func (f *fileTLS) apply(t *TLS) error {
	if f.Defaults != nil && f.Defaults.VerifyServerHostname != nil {
		return &FieldError{Field: "tls.defaults.verify_server_hostname", Reason: "belongs in tls.internal_rpc, as in Consul"}
	}
	if f.HTTPS != nil && f.HTTPS.VerifyServerHostname != nil {
		return &FieldError{Field: "tls.https.verify_server_hostname", Reason: "belongs in tls.internal_rpc, as in Consul"}
	}
	if f.DNS != nil && f.DNS.VerifyServerHostname != nil {
		return &FieldError{Field: "tls.dns.verify_server_hostname", Reason: "belongs in tls.internal_rpc: DNS over TLS has no server names to verify"}
	}
	f.Defaults.apply(&t.RPC)
	f.Defaults.apply(&t.HTTPS)
	f.Defaults.apply(&t.DNS)
	f.InternalRPC.apply(&t.RPC)
	f.HTTPS.apply(&t.HTTPS)
	f.DNS.apply(&t.DNS)
	return nil
}

// validateTLS reports the bad fields of the tls block: tlsutil's own
// checks (files readable, a certificate with its key, a CA to verify
// with), named by the block they came from.
func (c *Config) validateTLS(bad func(field, format string, args ...any)) {
	for _, b := range []struct {
		block string
		cfg   tlsutil.Config
	}{{"internal_rpc", c.TLS.RPC}, {"https", c.TLS.HTTPS}, {"dns", c.TLS.DNS}} {
		if b.cfg == (tlsutil.Config{}) || b.cfg == tlsutil.DefaultConfig() {
			continue
		}
		if err := b.cfg.Validate(); err != nil {
			bad("tls."+b.block, "%v", err)
		}
	}
	if c.Ports.HTTPS >= 0 && c.TLS.HTTPS.CertFile == "" {
		bad("ports.https", "needs tls.https (or tls.defaults) cert_file and key_file")
	}
	if c.Ports.DNSTLS >= 0 && c.TLS.DNS.CertFile == "" {
		bad("ports.dns_tls", "needs tls.dns (or tls.defaults) cert_file and key_file")
	}
}
