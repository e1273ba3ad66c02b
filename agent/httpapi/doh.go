package httpapi

import (
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// dnsMessageType is the media type of a DNS message in wire format (RFC
// 8484 6).
const dnsMessageType = "application/dns-message"

// maxDNSMessage is the largest DNS message: a query longer than that is
// not one.
const maxDNSMessage = 65535

// routeDoH serves /dns-query: 404 on the plain HTTP listener, whatever
// the method, and without Deps.ServeDNSWire; else dnsQuery, other methods than
// GET and POST answered 405.
// dnsQuery answers DNS over HTTPS (RFC 8484): GET /dns-query?dns=<the
// query, base64url> or POST /dns-query with the query as its body
// (Content-Type application/dns-message), answered 200 with the reply as
// application/dns-message and Cache-Control max-age of its smallest TTL.
// Only over HTTPS: on the plain HTTP listener it is 404, as DNS answers
// must not travel in the clear on a port that claims to be encrypted DNS.
// A query that is not a DNS message is 400, a POST of another type 415.
// It checks no ACL: like the DNS port, answers follow the agent's default
// token.
func (s *Server) dnsQuery(w http.ResponseWriter, r *http.Request) error {
	if s.deps.ServeDNSWire == nil || r.TLS == nil {
		return notFound("no endpoint %s: DNS over HTTPS is served on the HTTPS port only", r.URL.Path)
	}
	var query []byte
	switch r.Method {
	case http.MethodGet:
		v := r.URL.Query().Get("dns")
		if v == "" {
			return badRequest("dns", "is required: the DNS query in wire format, base64url-encoded (RFC 8484 4.1)")
		}
		// RFC 8484 4.1: base64url without padding; padding is
		// forgiven.
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(v, "="))
		if err != nil {
			return badRequest("dns", "is not base64url: %v", err)
		}
		query = b
	case http.MethodPost:
		if ct := r.Header.Get("Content-Type"); !isDNSMessageType(ct) {
			return &httpError{code: http.StatusUnsupportedMediaType, body: errorBody{
				Error: "Content-Type: " + quoteHeader(ct) + " is not " + dnsMessageType, Field: "Content-Type", Reason: "must be " + dnsMessageType,
			}}
		}
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDNSMessage))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return &httpError{code: http.StatusRequestEntityTooLarge, body: errorBody{Error: "a DNS message is at most 65535 bytes"}}
			}
			return badRequest("body", "could not be read: %v", err)
		}
		query = b
	}
	reply, maxAge, err := s.deps.ServeDNSWire(query, remoteAddr(r))
	if err != nil {
		field := "dns"
		if r.Method == http.MethodPost {
			field = "body"
		}
		return badRequest(field, "%s", oneLine(err.Error()))
	}
	h := w.Header()
	h.Set("Content-Type", dnsMessageType)
	h.Set("Cache-Control", "max-age="+strconv.FormatUint(uint64(maxAge), 10))
	h.Set("Content-Length", strconv.Itoa(len(reply)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(reply) // a client gone away is its own loss
	return nil
}

// isDNSMessageType reports whether a Content-Type is application/dns-message
// (parameters and case aside).
func isDNSMessageType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), dnsMessageType)
}

// remoteAddr is the request's client address, nil when it is not an
// IP address and port.
func remoteAddr(r *http.Request) net.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return nil
	}
	return net.TCPAddrFromAddrPort(ap)
}
