package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"unicode/utf8"
)

// StatusError is the error for an answer with a status other than 2xx.
type StatusError struct {
	// Code is the HTTP status code, e.g. 400.
	Code int
	// Message is the agent's "error" text, or a summary of the body when
	// the agent (or a proxy in front of it) sent something else.
	Message string
	// Field and Reason are set for a rejected request (400): the field
	// of the request that is wrong, e.g. "Port", and why.
	Field  string
	Reason string
}

// Error returns one line, e.g.
// "agent returned 400: Port: must be between 0 and 65535, got 70000".
func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" && e.Field != "" {
		msg = e.Field + ": " + e.Reason
	}
	if msg == "" {
		msg = http.StatusText(e.Code)
	}
	return fmt.Sprintf("agent returned %d: %s", e.Code, msg)
}

// ConfigError is the error of NewClient for a Config it cannot use: the
// field (or the environment variable DefaultConfig read) and the reason.
type ConfigError struct {
	// Field is a field of Config, e.g. "Address" or "TLS.CAFile", or an
	// environment variable, e.g. "CAIRN_HTTP_SSL".
	Field string
	// Reason says what is wrong, e.g. `invalid agent address "x": ...`.
	Reason string
	// Err is the underlying error, e.g. the one of reading a file; nil
	// when there is none.
	Err error
}

// Error returns "<Field>: <Reason>".
func (e *ConfigError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap returns Err, so errors.Is(err, fs.ErrNotExist) works.
func (e *ConfigError) Unwrap() error { return e.Err }

// UnreachableError is the error for a request that got no answer from the
// agent: the connection was refused, the host is unknown, the request timed
// out, or the connection broke before a response arrived.
type UnreachableError struct {
	// Address is the agent's base URL, e.g. "http://127.0.0.1:8500".
	Address string
	// Err is the transport error as net/http returned it.
	Err error
}

// Error returns one line naming the address and the root cause, e.g.
//
//	cannot reach the cairn agent at http://127.0.0.1:8500: connection refused (is "cairn agent" running? set -http-addr or CAIRN_HTTP_ADDR)
//
// rather than net/http's nested chain of operations.
func (e *UnreachableError) Error() string {
	cause := rootCause(e.Err)
	hint := `is "cairn agent" running? set -http-addr or CAIRN_HTTP_ADDR`
	if isTLSFailure(e.Err, cause) {
		// The agent is there; asking whether it runs would mislead.
		hint = "check -ca-file, -client-cert, -client-key and -tls-server-name, " +
			"or CAIRN_CACERT, CAIRN_CLIENT_CERT, CAIRN_CLIENT_KEY and CAIRN_TLS_SERVER_NAME"
	}
	return fmt.Sprintf("cannot reach the cairn agent at %s: %s (%s)", e.Address, cause, hint)
}

// isTLSFailure reports whether err, whose root cause reads cause, is a
// failed TLS handshake: a certificate refused on either side, or an HTTPS
// request answered in plain HTTP. Alerts from the agent ("tls: certificate
// required") are not exported types, hence the look at the text.
func isTLSFailure(err error, cause string) bool {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		host      x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &host) || errors.As(err, &invalid) ||
		strings.HasPrefix(cause, "tls: ") || strings.Contains(cause, "HTTP response to HTTPS client")
}

// Unwrap returns the transport error, so errors.Is(err, syscall.ECONNREFUSED)
// and errors.Is(err, context.DeadlineExceeded) work.
func (e *UnreachableError) Unwrap() error { return e.Err }

// rootCause reduces a transport error to the part a person needs: the
// errno text, the DNS failure, or "timed out".
func rootCause(err error) string {
	var (
		errno  syscall.Errno
		dnsErr *net.DNSError
		netErr net.Error
	)
	switch {
	case err == nil:
		return "unknown error"
	case errors.As(err, &errno):
		return errno.Error()
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return fmt.Sprintf("no such host %q", dnsErr.Name)
		}
		return fmt.Sprintf("lookup %s: %s", dnsErr.Name, dnsErr.Err)
	case errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before a response arrived"
	}
	// Anything else (TLS failures, malformed responses): the innermost
	// error of the chain, which is the one that says what went wrong.
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	return oneLine(err.Error())
}

// oneLine folds s onto a single line and bounds its length, so that an
// error built from a response body never floods a terminal.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const limit = 300
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
