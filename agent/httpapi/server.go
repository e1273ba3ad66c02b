package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// Local is this agent's own services and checks (package agent/local
// satisfies it). Handlers call it from their own goroutines, several at
// once. The writes return once the change is committed to the catalog, or
// with an error wrapping local.ErrNotSynced when it was kept on the agent
// but could not be pushed yet.
type Local interface {
	// AddService stores svc with its checks (already validated by the
	// handler, their IDs and ServiceIDs filled in) and pushes it.
	AddService(ctx context.Context, svc *catalog.Service, defs []*checks.Definition) error
	// RemoveService removes a service and its checks; an unknown ID is an
	// error wrapping local.ErrUnknownService.
	RemoveService(ctx context.Context, id string) error
	// Services returns the agent's services.
	Services() []*catalog.Service
	// ServicesChanged returns a channel closed at the next change to the
	// agent's services (Services' answer).
	ServicesChanged() <-chan struct{}
	// AddCheck stores a check (already validated) and starts it. A
	// ServiceID the agent does not hold is a *catalog.FieldError naming
	// "ServiceID".
	AddCheck(ctx context.Context, def *checks.Definition) error
	// RemoveCheck stops and removes a check; an unknown ID is an error
	// wrapping local.ErrUnknownCheck.
	RemoveCheck(ctx context.Context, id string) error
	// UpdateTTL reports the status of a TTL check. An unknown ID wraps
	// local.ErrUnknownCheck; a check of another kind wraps local.ErrNotTTL.
	UpdateTTL(id string, status catalog.HealthStatus, output string) error
	// Checks returns the agent's own checks with their current status.
	Checks() []*catalog.Check
	// SetServiceMaintenance puts a service in maintenance (or takes it
	// out); an unknown ID wraps local.ErrUnknownService.
	SetServiceMaintenance(ctx context.Context, serviceID string, enable bool, reason string) error
	// SetNodeMaintenance puts the whole node in maintenance (or takes it
	// out).
	SetNodeMaintenance(ctx context.Context, enable bool, reason string) error
}

// Cluster is what the agent does itself about the cluster: its LAN gossip
// pool, a server's WAN pool, the datacenters it knows, leaving, and the
// gossip keyring. Handlers call it from their own goroutines, several at
// once.
type Cluster interface {
	// Members returns the members of the agent's LAN pool, itself included.
	Members() []Member
	// WANMembers returns the members of the WAN pool (the servers of
	// every datacenter), this server included, named "<node>.<dc>". An
	// agent in no WAN pool (a client) returns an error wrapping
	// ErrNotInWAN.
	WANMembers() ([]Member, error)
	// Join asks the LAN pool to join the agents at addrs (host or
	// host:port); it returns how many answered.
	Join(ctx context.Context, addrs []string) (int, error)
	// JoinWAN asks the WAN pool to join the servers at addrs, as Join;
	// an agent in no WAN pool returns an error wrapping ErrNotInWAN.
	JoinWAN(ctx context.Context, addrs []string) (int, error)
	// Datacenters returns the datacenters the agent knows, sorted: a
	// server's, from its WAN pool; a client's, from a server.
	Datacenters(ctx context.Context) ([]string, error)
	// ForceLeave turns the failed member named node Left in the LAN pool
	// (on a server also "<node>.<dc>" in the WAN pool), or with wan the
	// WAN member named node only, and gossips it; with prune the member is
	// forgotten at once. An alive or unknown member is left alone, without
	// an error, as Consul's. A client asked for wan returns an error
	// wrapping ErrNotInWAN.
	ForceLeave(ctx context.Context, node string, prune, wan bool) error
	// Leave leaves the cluster gracefully and then stops the agent. It
	// returns once the leave has been broadcast (or failed); the agent shuts
	// down after the HTTP response is written.
	Leave(ctx context.Context) error
	// Keyring applies op to every gossip pool the key is in, whichever
	// agent it is: the WAN pool and the LAN pool of each datacenter, run
	// by the servers, and returns one response per pool, the WAN pool
	// first: for rpc.KeyringList what their alive members hold, for the
	// others the same, after the change. key is the base64 key ("" for
	// rpc.KeyringList). With localOnly (a list only) it answers from the
	// agent's own view of its LAN pool instead.
	//
	// A pool that refused the change, changing nothing (using a key some
	// member lacks, removing a key some member encrypts with, a bad key,
	// a full keyring, no gossip encryption), makes it a
	// *catalog.FieldError (naming "Key", or "encrypt"). A pool where it
	// failed otherwise makes it an error wrapping ErrKeyringIncomplete.
	// Both name the pools and members.
	Keyring(ctx context.Context, op rpc.KeyringOp, key string, localOnly bool) ([]KeyringResponse, error)
}

// ErrNotInWAN is wrapped by the errors of Cluster.WANMembers and JoinWAN on
// an agent that is in no WAN pool; the API answers 400 naming "wan".
var ErrNotInWAN = errors.New("this agent is in no WAN pool: only servers are")

// ErrBadConfig is wrapped by an error of Deps.Reload for a configuration
// that does not load and has no key to name (a file that does not parse,
// or is missing): a 400, as a bad key's *catalog.FieldError is.
var ErrBadConfig = errors.New("the configuration does not load")

// Member is one agent of a gossip pool as Cluster reports it.
type Member struct {
	Name            string
	Addr            string // gossip IP
	Port            uint16 // gossip port
	Status          string // "alive", "leaving", "left", "failed", "incompatible"
	Role            string // "server" or "client"
	Datacenter      string
	RPCAddr         string // host:port of a server's RPC; "" for a client
	ProtocolVersion uint8
	// ID is the member's node ID, Build its "<version>:<revision>", and
	// ProtocolMin and ProtocolMax the protocol versions it speaks: ""
	// and 0 when unknown.
	ID, Build                string
	ProtocolMin, ProtocolMax uint8
	// Refused says why an "incompatible" peer was refused.
	Refused string
	// ClockSkew is how far a server's wall clock is ahead of this
	// agent's (negative: behind), as this agent's rpc pool last measured
	// it; ClockSkewKnown is false when it has not (a client, a server
	// this agent has not called).
	ClockSkew      time.Duration
	ClockSkewKnown bool
}

// Config configures the HTTP listener.
type Config struct {
	// Addr is the listen address of plain HTTP. Empty serves none, so
	// that the API may be served over HTTPS only. Default
	// "127.0.0.1:8500".
	Addr string
	// UnixSocket, when set, is the path of a unix socket the plain HTTP
	// API listens on instead of Addr (Consul's addresses.http =
	// "unix://<path>"); a socket file left by an agent that died is
	// replaced. SocketMode (when not 0), SocketUID and SocketGID (when not
	// -1) are given to the file. Defaults "", 0, -1 and -1.
	UnixSocket           string
	SocketMode           os.FileMode
	SocketUID, SocketGID int
	// HTTPSAddr is the listen address of the same API over TLS, with TLS
	// (tlsutil's IncomingHTTPS). Empty serves no HTTPS. Default empty.
	HTTPSAddr string
	TLS       *tls.Config
	// Datacenter is the agent's datacenter, reported on its services.
	Datacenter string
	// NodeName, NodeID (optional) and Server describe the agent in GET
	// /v1/agent/self. NodeName is also a host name the API answers to
	// (see AllowedHosts). Default "", "" and false.
	NodeName string
	NodeID   string
	Server   bool
	// Version is the agent's version, in GET /v1/agent/self. Default "".
	Version string
	// Domain is the DNS domain the agent answers for ("cluster."), in GET
	// /v1/agent/self (DebugConfig.DNSDomain, as Consul's), where the web
	// UI reads it to show a service's DNS names. Default "".
	Domain string
	// MaxBodyBytes caps request bodies. Default 1 MiB.
	MaxBodyBytes int64
	// ReadHeaderTimeout bounds a slow client's headers. Default 10s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, headers and body, from
	// its first byte, so a client sending its body slowly cannot hold a
	// connection (and a file descriptor) for long. It does not bound the
	// answer: a blocking query may wait minutes for its data once the
	// request is read (guard.go). Default 10s.
	ReadTimeout time.Duration
	// EnableScriptChecks accepts checks that run a command (Args). Default
	// false: such a check is refused with a 400 naming its Args.
	EnableScriptChecks bool
	// AllowedHosts are the host names, besides the always allowed ones,
	// that a request's Host header may name (its port aside): a request
	// naming any other host is refused with a 403, so that a web page
	// whose name an attacker re-points at this agent (DNS rebinding)
	// cannot read or write through the visitor's browser. Always allowed:
	// an IP address, "localhost" and names under ".localhost", and
	// NodeName. Names are compared case-insensitively; "*" allows any
	// host. Default none: an agent reached by a DNS name must list it.
	AllowedHosts []string
	// MaxConnsPerClient caps the connections one client IP address may
	// hold open, as Consul's http_max_conns_per_client: one more is
	// answered "429 Too Many Requests" and closed. 0 means no cap.
	// Default 200 (Consul's).
	MaxConnsPerClient int
	// MaxConns caps the connections held open from all clients together,
	// so that they cannot take every file descriptor of the process (DNS
	// over TCP, Raft and gossip need some too): one more is answered "503
	// Service Unavailable" and closed. 0 means no cap. Default 0; the
	// agent derives one from its file descriptor limit (internal/fdlimit).
	MaxConns int
	// KVMaxValueSize is the largest key/value entry a PUT may carry, in
	// bytes; a larger one is a 413 (the servers refuse it too). Default
	// catalog.DefaultKVMaxValueSize.
	KVMaxValueSize int
	// ACLsEnabled and PrimaryDatacenter (default Datacenter) are reported
	// in GET /v1/agent/self, where `consul debug` reads the first.
	// Default false and "".
	ACLsEnabled       bool
	PrimaryDatacenter string
	// EnableDebug serves Go's runtime profiles under /debug/pprof/
	// (debug_endpoint.go), as Consul's enable_debug; without it they are
	// 404. Default false.
	EnableDebug bool
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		Addr:              "127.0.0.1:8500",
		Datacenter:        "dc1",
		MaxBodyBytes:      1 << 20,          // 1 MiB: the largest registration is a few KiB
		ReadHeaderTimeout: 10 * time.Second, // any client sends its headers at once
		ReadTimeout:       10 * time.Second, // 1 MiB in 10s is under 1 Mbit/s
		MaxConnsPerClient: 200,              // Consul's http_max_conns_per_client
		KVMaxValueSize:    catalog.DefaultKVMaxValueSize,
		SocketUID:         -1, // the agent's own
		SocketGID:         -1,
		// AllowedHosts: none besides IPs, localhost and the node name.
		// MaxConns: 0, no cap until the agent sets one from its fd limit.
	}
}

// Validate reports every bad field.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil && c.Addr != "" {
		errs = append(errs, fmt.Errorf("http Addr: %q is not host:port", c.Addr))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("http MaxBodyBytes: must be at least 1024, got %d", c.MaxBodyBytes))
	}
	if c.HTTPSAddr != "" && c.TLS == nil {
		errs = append(errs, errors.New("http HTTPSAddr: needs TLS (a certificate)"))
	}
	if c.ReadHeaderTimeout <= 0 {
		errs = append(errs, fmt.Errorf("http ReadHeaderTimeout: must be positive, got %s", c.ReadHeaderTimeout))
	}
	if c.ReadTimeout <= 0 {
		errs = append(errs, fmt.Errorf("http ReadTimeout: must be positive, got %s", c.ReadTimeout))
	}
	if c.MaxConnsPerClient < 0 {
		errs = append(errs, fmt.Errorf("http MaxConnsPerClient: must be 0 (no cap) or more, got %d", c.MaxConnsPerClient))
	}
	if c.MaxConns < 0 {
		errs = append(errs, fmt.Errorf("http MaxConns: must be 0 (no cap) or more, got %d", c.MaxConns))
	}
	for i, h := range c.AllowedHosts {
		if reason := badHostName(h); reason != "" {
			errs = append(errs, fmt.Errorf("http AllowedHosts[%d]: %q %s", i, h, reason))
		}
	}
	return errors.Join(errs...)
}

// idleTimeout closes keep-alive connections left unused this long.
const idleTimeout = 2 * time.Minute

// Server is the HTTP API server.
type Server struct {
	cfg     Config
	deps    Deps
	door    Door
	local   Local
	cluster Cluster
	monitor monitorState // ends the log streams of /v1/agent/monitor (monitor_endpoint.go)
	logger  *slog.Logger
	hosts   hostSet // the Host names answered besides IPs and localhost (guard.go)
	// httpMetrics counts and times the endpoints' requests
	// (metrics_http.go).
	httpMetrics *httpMetrics
	handler     http.Handler

	mu        sync.Mutex
	srv       *http.Server
	addr      net.Addr
	httpsAddr net.Addr
	wg        sync.WaitGroup
}

// New builds the server over deps; Start makes it listen.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := errors.Join(cfg.Validate(), deps.validate()); err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, deps: deps, door: deps.Door, local: deps.Local, cluster: deps.Cluster,
		logger: deps.Logger.With("component", "http"), hosts: newHostSet(cfg.NodeName, cfg.AllowedHosts),
		httpMetrics: newHTTPMetrics(),
	}
	s.handler = s.guard(s.routes()) // guard.go: Host and cross-origin checks first
	return s, nil
}

// Handler returns the API's handler, with its Host and cross-origin
// checks, for tests that use httptest. The connection limits and timeouts
// are the listener's and http.Server's, set up by Start.
func (s *Server) Handler() http.Handler { return s.handler }

// Start binds the listener (so a bind error is returned here) and serves in
// a goroutine owned by the server.
func (s *Server) Start() error {
	var ln, tlsLn net.Listener
	var err error
	switch {
	case s.cfg.UnixSocket != "":
		if ln, err = listenUnix(s.cfg); err != nil {
			return fmt.Errorf("http listen: %w", err)
		}
	case s.cfg.Addr != "":
		if ln, err = net.Listen("tcp", s.cfg.Addr); err != nil {
			return fmt.Errorf("http listen: %w", err)
		}
	}
	if s.cfg.HTTPSAddr != "" {
		if tlsLn, err = net.Listen("tcp", s.cfg.HTTPSAddr); err != nil {
			if ln != nil {
				_ = ln.Close()
			}
			return fmt.Errorf("https listen: %w", err)
		}
	}
	if s.cfg.MaxConnsPerClient > 0 || s.cfg.MaxConns > 0 {
		if ln != nil {
			ln = newLimitListener(ln, s.cfg.MaxConnsPerClient, s.cfg.MaxConns, s.logger) // listener.go
		}
		if tlsLn != nil {
			tlsLn = newLimitListener(tlsLn, s.cfg.MaxConnsPerClient, s.cfg.MaxConns, s.logger)
		}
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		// ReadTimeout runs from a request's first byte to the end of its
		// body. net/http clears the connection's read deadline once the
		// body has been read to its end (to watch for the client going
		// away), so the deadline never cancels a handler that runs longer,
		// such as a blocking query (TestReadTimeoutSparesBlockingQueries).
		ReadTimeout: s.cfg.ReadTimeout,
		// No WriteTimeout: net/http sets it when the request has been read,
		// so it bounds the handler's whole run, and a blocking query
		// legitimately waits up to ?wait (10m at most, plus jitter) before
		// writing a byte; any WriteTimeout short enough to matter against
		// a client that never reads its answer would cut those queries.
		IdleTimeout: idleTimeout,
		ErrorLog:    slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
		TLSConfig:   s.cfg.TLS,
		ConnContext: markUnixConn, // guard.go
	}
	s.mu.Lock()
	s.srv = srv
	if ln != nil {
		s.addr = ln.Addr()
	}
	if tlsLn != nil {
		s.httpsAddr = tlsLn.Addr()
	}
	s.mu.Unlock()
	if ln != nil {
		s.wg.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.logger.Error("http server stopped", "err", err)
			}
		})
	}
	if tlsLn != nil {
		s.wg.Go(func() {
			// The certificate comes from TLSConfig (GetCertificate), so
			// a reload reaches new connections.
			if err := srv.ServeTLS(tlsLn, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.logger.Error("https server stopped", "err", err)
			}
		})
	}
	return nil
}

// HTTPSAddr is the bound HTTPS address, nil before Start or without HTTPS.
func (s *Server) HTTPSAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.httpsAddr
}

// Addr is the bound plain HTTP address, nil before Start or without
// plain HTTP.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Shutdown stops accepting requests, waits for those in flight until ctx
// ends, then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	s.monitor.end() // log streams end: Shutdown waits for their handlers
	err := srv.Shutdown(ctx)
	if err != nil {
		_ = srv.Close()
	}
	s.wg.Wait()
	if err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	return nil
}

// listenUnix listens on cfg.UnixSocket with the file's owner and mode
// set. A socket file already there is removed first (an agent that died
// leaves it); any other file there is an error.
func listenUnix(cfg Config) (net.Listener, error) {
	path := cfg.UnixSocket
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("unix socket %s: a file that is not a socket is there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("unix socket %s: remove the old one: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if cfg.SocketUID != -1 || cfg.SocketGID != -1 {
		err = os.Chown(path, cfg.SocketUID, cfg.SocketGID)
	}
	if err == nil && cfg.SocketMode != 0 {
		err = os.Chmod(path, cfg.SocketMode)
	}
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("unix socket %s: %w", path, err)
	}
	return ln, nil
}
