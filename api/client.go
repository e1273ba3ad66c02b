package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultAddress is the agent's HTTP address when neither Config.Address
// nor $CAIRN_HTTP_ADDR says otherwise.
const DefaultAddress = "127.0.0.1:8500"

// AddressEnv names the environment variable DefaultConfig reads the agent's
// address from.
const AddressEnv = "CAIRN_HTTP_ADDR"

// TokenEnv names the environment variable DefaultConfig reads the ACL
// token from.
const TokenEnv = "CAIRN_HTTP_TOKEN"

// The environment variables DefaultConfig reads HTTPS settings from, as
// Consul's CONSUL_HTTP_SSL, CONSUL_CACERT, ... : HTTPSEnv "true" makes a
// "host:port" address https; the others fill Config.TLS.
const (
	HTTPSEnv         = "CAIRN_HTTP_SSL"
	CACertEnv        = "CAIRN_CACERT"
	ClientCertEnv    = "CAIRN_CLIENT_CERT"
	ClientKeyEnv     = "CAIRN_CLIENT_KEY"
	TLSServerNameEnv = "CAIRN_TLS_SERVER_NAME"
)

// maxResponseBytes caps how much of a response body is read.
const maxResponseBytes = 16 << 20

// Config configures a Client.
type Config struct {
	// Address of the agent's HTTP API: "host:port", "http://host:port" or
	// "https://host:port". Empty means DefaultAddress.
	Address string
	// Scheme is the scheme of an Address written "host:port": "http" or
	// "https". Empty means "http". An Address with a scheme keeps its own.
	Scheme string
	// HTTPClient sends the requests. Nil means a client using
	// http.DefaultTransport (a clone of it carrying TLS when TLS is set)
	// and no timeout of its own (the context of each call bounds it).
	HTTPClient *http.Client
	// Token is the secret ID of the ACL token every request is made with
	// (the X-Consul-Token header). Empty sends none: the agent's default
	// token, or the anonymous one, applies.
	Token string
	// TLS is the client's side of HTTPS. It applies only when the address
	// is https, and only to the client NewClient builds: with HTTPClient
	// set it must be empty.
	TLS TLSConfig

	// envErr is what DefaultConfig could not read from the environment.
	// NewClient returns it: a mistyped CAIRN_HTTP_SSL must not quietly send
	// the token in clear.
	envErr error
}

// DefaultConfig returns a Config read from the environment: Address from
// $CAIRN_HTTP_ADDR (DefaultAddress when unset), Token from
// $CAIRN_HTTP_TOKEN, Scheme "https" when $CAIRN_HTTP_SSL is true, and TLS
// from $CAIRN_CACERT, $CAIRN_CLIENT_CERT, $CAIRN_CLIENT_KEY and
// $CAIRN_TLS_SERVER_NAME. A $CAIRN_HTTP_SSL that is not a boolean makes
// NewClient fail.
func DefaultConfig() Config {
	cfg := Config{
		Address: os.Getenv(AddressEnv),
		Token:   os.Getenv(TokenEnv),
		TLS: TLSConfig{
			CAFile:     os.Getenv(CACertEnv),
			CertFile:   os.Getenv(ClientCertEnv),
			KeyFile:    os.Getenv(ClientKeyEnv),
			ServerName: os.Getenv(TLSServerNameEnv),
		},
	}
	if cfg.Address == "" {
		cfg.Address = DefaultAddress
	}
	if v := os.Getenv(HTTPSEnv); v != "" {
		ssl, err := strconv.ParseBool(v)
		switch {
		case err != nil:
			cfg.envErr = &ConfigError{Field: HTTPSEnv, Reason: fmt.Sprintf("want true or false, got %q", v)}
		case ssl:
			cfg.Scheme = "https"
		}
	}
	return cfg
}

// Client talks to one agent's HTTP API. It is safe for concurrent use.
type Client struct {
	base  *url.URL // scheme and host only
	http  *http.Client
	token string
}

// NewClient checks cfg and returns a Client. It reads the TLS files but
// does not contact the agent. Every error is a *ConfigError naming the
// field (or the environment variable) at fault.
func NewClient(cfg Config) (*Client, error) {
	if cfg.envErr != nil {
		return nil, cfg.envErr
	}
	addr := cfg.Address
	if addr == "" {
		addr = DefaultAddress
	}
	base, err := parseAddress(addr, cfg.Scheme)
	if err != nil {
		return nil, err
	}
	if err := checkToken(cfg.Token); err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	switch {
	case hc != nil && base.Scheme == "https" && cfg.TLS != (TLSConfig{}):
		return nil, &ConfigError{Field: "TLS", Reason: "cannot be applied to a caller's HTTPClient: " +
			"set TLSClientConfig on its Transport instead, or leave HTTPClient nil"}
	case hc == nil && base.Scheme == "https" && cfg.TLS != (TLSConfig{}):
		if hc, err = cfg.TLS.httpClient(); err != nil {
			return nil, err
		}
	case hc == nil:
		hc = &http.Client{}
	}
	return &Client{base: base, http: hc, token: cfg.Token}, nil
}

// checkToken refuses a token net/http could not put in a header; the
// reason never quotes it, since it is a secret.
func checkToken(token string) error {
	for _, r := range token {
		if r < 0x20 || r == 0x7f {
			return &ConfigError{Field: "Token", Reason: "holds a control character (a newline read from a file?)"}
		}
	}
	return nil
}

// parseAddress turns "host:port" (with scheme, "" meaning http) or
// "http(s)://host[:port]" into a base URL.
func parseAddress(addr, scheme string) (*url.URL, error) {
	bad := func(reason string) error {
		return &ConfigError{Field: "Address", Reason: fmt.Sprintf("invalid agent address %q: %s", addr, reason)}
	}
	switch scheme {
	case "":
		scheme = "http"
	case "http", "https":
	default:
		return nil, &ConfigError{Field: "Scheme", Reason: fmt.Sprintf(`want "http" or "https", got %q`, scheme)}
	}
	if !strings.Contains(addr, "://") {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, bad(`want "host:port" or "http://host:port"`)
		}
		if host == "" || port == "" {
			return nil, bad("host and port must not be empty")
		}
		addr = scheme + "://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, bad(`want "host:port" or "http://host:port"`)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, bad("scheme must be http or https")
	case u.Hostname() == "":
		return nil, bad("missing host")
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return nil, bad("want only a scheme, a host and a port")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, bad("port must be between 1 and 65535")
		}
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// Address returns the base URL requests go to, e.g. "http://127.0.0.1:8500".
func (c *Client) Address() string { return c.base.String() }

// Agent returns the endpoints of the local agent (/v1/agent).
func (c *Client) Agent() *Agent { return &Agent{c: c} }

// ACL returns the ACL endpoints (/v1/acl).
func (c *Client) ACL() *ACL { return &ACL{c: c} }

// Catalog returns the catalog endpoints (/v1/catalog).
func (c *Client) Catalog() *Catalog { return &Catalog{c: c} }

// Health returns the health endpoints (/v1/health).
func (c *Client) Health() *Health { return &Health{c: c} }

// Operator returns the operator endpoints (/v1/operator).
func (c *Client) Operator() *Operator { return &Operator{c: c} }

// Status returns the status endpoints (/v1/status).
func (c *Client) Status() *Status { return &Status{c: c} }

// request is one call: method, escaped path, query and JSON body (nil for none).
type request struct {
	method string
	path   string
	query  url.Values
	body   any
	// raw, when set, is the body as it is (a KV value), instead of body.
	raw []byte
	// notFoundOK makes a 404 return the answer's QueryMeta with
	// errNotFound instead of a *StatusError (a missing key: its index is
	// what a blocking read waits on).
	notFoundOK bool
	// conflictOK makes a 409 decode its body into out, as a 2xx does,
	// and return errConflict (a rolled-back transaction's answer).
	conflictOK bool
	// emptyOK makes a 2xx without a body leave out as it is, as an
	// agent that answers with none does (Consul's keyring changes).
	emptyOK bool
}

// readRetries is how many times more an idempotent read (GET) is sent
// after it got no answer from the agent (UnreachableError), and
// retryBackoff the pause before the first retry, doubled before each next:
// an agent restarting or a connection the agent closed while idle gets a
// second chance, a dead agent is reported within half a second.
const (
	readRetries  = 2
	retryBackoff = 100 * time.Millisecond
)

// do sends r and decodes a 2xx JSON answer into out (unless out is nil).
// It returns the response's QueryMeta. A GET that gets no answer from the
// agent is sent again up to readRetries times, until ctx ends; other
// methods are sent once, since the agent may have acted on them.
func (c *Client) do(ctx context.Context, r request, out any) (*QueryMeta, error) {
	wait := retryBackoff
	for attempt := 0; ; attempt++ {
		meta, err := c.doOnce(ctx, r, out)
		var unreachable *UnreachableError
		if err == nil || r.method != http.MethodGet || attempt == readRetries || !errors.As(err, &unreachable) {
			return meta, err
		}
		if sleepCtx(ctx, wait) != nil {
			return nil, err
		}
		wait *= 2
	}
}

// doOnce sends r once.
func (c *Client) doOnce(ctx context.Context, r request, out any) (*QueryMeta, error) {
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); errors.Is(ctxErr, context.Canceled) {
			return nil, fmt.Errorf("%s %s: %w", r.method, r.path, ctxErr)
		}
		return nil, &UnreachableError{Address: c.Address(), Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("%s %s: %w", r.method, r.path, ctxErr)
		}
		return nil, fmt.Errorf("%s %s: read response: %w", r.method, r.path, err)
	}
	if len(body) > maxResponseBytes {
		return nil, fmt.Errorf("%s %s: response larger than %d bytes", r.method, r.path, maxResponseBytes)
	}
	if resp.StatusCode == http.StatusNotFound && r.notFoundOK {
		meta, err := parseQueryMeta(resp.Header)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
		}
		return meta, errNotFound
	}
	conflict := resp.StatusCode == http.StatusConflict && r.conflictOK
	if (resp.StatusCode < 200 || resp.StatusCode > 299) && !conflict {
		return nil, decodeStatusError(resp.StatusCode, body)
	}
	meta, err := parseQueryMeta(resp.Header)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	if out != nil && !(r.emptyOK && len(bytes.TrimSpace(body)) == 0) {
		if err := json.Unmarshal(body, out); err != nil {
			return nil, fmt.Errorf("%s %s: decode response: %w", r.method, r.path, err)
		}
	}
	if conflict {
		return meta, errConflict
	}
	return meta, nil
}

func (c *Client) newRequest(ctx context.Context, r request) (*http.Request, error) {
	u := c.base.String() + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.raw != nil {
		body = bytes.NewReader(r.raw)
	} else if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode request: %w", r.method, r.path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("X-Consul-Token", c.token)
	}
	if body != nil && r.raw == nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// decodeStatusError reads the agent's JSON error body; a body that is not
// one (a proxy's page, a plain-text 404) becomes the message as it is.
func decodeStatusError(code int, body []byte) *StatusError {
	e := &StatusError{Code: code}
	var payload struct {
		Error  string `json:"error"`
		Field  string `json:"field"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal(body, &payload) == nil && (payload.Error != "" || payload.Field != "") {
		e.Message = oneLine(payload.Error)
		e.Field = payload.Field
		e.Reason = oneLine(payload.Reason)
		return e
	}
	e.Message = oneLine(string(body))
	return e
}

// parseQueryMeta reads X-Consul-Index, X-Consul-KnownLeader and
// X-Consul-LastContact (milliseconds); a missing header is a zero field.
func parseQueryMeta(h http.Header) (*QueryMeta, error) {
	meta := &QueryMeta{}
	if v := h.Get("X-Consul-Index"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("invalid X-Consul-Index header %q", v)
		}
		meta.LastIndex = idx
	}
	if v := h.Get("X-Consul-KnownLeader"); v != "" {
		known, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("invalid X-Consul-KnownLeader header %q", v)
		}
		meta.KnownLeader = known
	}
	if v := h.Get("X-Consul-LastContact"); v != "" {
		ms, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("invalid X-Consul-LastContact header %q", v)
		}
		meta.LastContact = time.Duration(ms) * time.Millisecond
	}
	return meta, nil
}
