package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// A web page can make its visitor's browser send requests to the agent
// (on 127.0.0.1:8500, say) in two ways that guard refuses:
//
//   - DNS rebinding: the page's own host name is re-pointed at the
//     agent's address, so the browser deems the agent same-origin and
//     lets the page read its answers. Such a request still names the
//     page's host in its Host header, which the agent does not answer to.
//   - Cross-site request forgery: a form or a "simple" fetch (POST with
//     Content-Type text/plain, no preflight) from another origin. The
//     browser sends it, with Sec-Fetch-Site (or Origin) telling where it
//     comes from; net/http's CrossOriginProtection refuses such writes.
//
// Clients other than browsers (curl, the api package, Consul's api client)
// send neither Sec-Fetch-Site nor Origin, and name the address they dial
// in Host, so they pass.

// hostSet is the host names a request's Host header may name besides an
// IP address and localhost: the node name and Config.AllowedHosts,
// lowercased, without a trailing dot.
type hostSet struct {
	names map[string]bool
	any   bool // "*" was allowed: every host is
}

// newHostSet returns the set of nodeName and allowed ("*" allows any).
func newHostSet(nodeName string, allowed []string) hostSet {
	hs := hostSet{names: make(map[string]bool, len(allowed)+1)}
	for _, h := range append([]string{nodeName}, allowed...) {
		switch h = normalHost(h); h {
		case "":
		case "*":
			hs.any = true
		default:
			hs.names[h] = true
		}
	}
	return hs
}

// normalHost lowercases h and drops one trailing dot: "Node1." and
// "node1" are one host.
func normalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// badHostName returns why h cannot be an entry of Config.AllowedHosts, or
// "" when it can: "*" or a host name or IP address without a port.
func badHostName(h string) string {
	switch {
	case h == "*":
		return ""
	case h == "":
		return "is empty"
	case strings.ContainsAny(h, " \t/\\@?#[]"):
		return "must be a host name or IP address, without scheme, port or path"
	}
	if _, _, err := net.SplitHostPort(h); err == nil {
		return "must not have a port: any port is allowed"
	}
	return ""
}

// allows reports whether a request whose Host header is hostport may be
// answered: an empty one (HTTP/1.0, which no browser sends), an IP
// address, localhost or a name under .localhost (RFC 6761: they are never
// the attacker's), or a name of the set; any port.
func (hs hostSet) allows(hostport string) bool {
	if hostport == "" || hs.any {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]") // "[::1]" without a port
	}
	host = normalHost(host)
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost") || hs.names[host]
}

// guard answers 403 to a request naming a host the agent does not answer
// to (see Config.AllowedHosts) and to a cross-origin write from a browser,
// and passes every other request to next.
func (s *Server) guard(next http.Handler) http.Handler {
	// The zero value trusts no other origin; none is configurable, as the
	// agent's own UI is served from its own origin.
	var csrf http.CrossOriginProtection
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts.allows(r.Host) && r.Context().Value(unixConnKey{}) == nil {
			writeJSON(w, http.StatusForbidden, errorBody{
				Error:  "Host: " + quoteHeader(r.Host) + " is not a name of this agent; add it to the agent's allowed hosts (http_config.allowed_hosts) to reach it by that name",
				Field:  "Host",
				Reason: "not an allowed host",
			})
			return
		}
		if err := csrf.Check(r); err != nil {
			field := "Sec-Fetch-Site"
			if r.Header.Get(field) == "" {
				field = "Origin"
			}
			writeJSON(w, http.StatusForbidden, errorBody{
				Error:  field + ": a " + r.Method + " from another origin is refused: " + err.Error(),
				Field:  field,
				Reason: "cross-origin request",
			})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// unixConnKey marks the context of a request that came over the unix
// socket, whose Host header is whatever the client dialed by (Consul's
// client sends the socket's path): no browser reaches a unix socket, so
// DNS rebinding cannot, and the Host check is left out.
type unixConnKey struct{}

// markUnixConn is http.Server's ConnContext.
func markUnixConn(ctx context.Context, c net.Conn) context.Context {
	if c.LocalAddr().Network() == "unix" {
		return context.WithValue(ctx, unixConnKey{}, true)
	}
	return ctx
}

// quoteHeader quotes a header value for an error message, cut to a
// sensible length.
func quoteHeader(v string) string {
	const maxLen = 100
	if len(v) > maxLen {
		v = v[:maxLen] + "..."
	}
	return strconv.Quote(v)
}
