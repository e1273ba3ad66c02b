package api

import (
	"context"
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
	return fmt.Sprintf("cannot reach the cairn agent at %s: %s "+
		"(is \"cairn agent\" running? set -http-addr or CAIRN_HTTP_ADDR)",
		e.Address, rootCause(e.Err))
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
