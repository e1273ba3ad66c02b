package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// errorBody is every error response: Error is one line; Field and Reason
// are set for bad input.
type errorBody struct {
	Error  string `json:"error"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// httpError is an error with the status code it is answered with.
type httpError struct {
	code int
	body errorBody
}

func (e *httpError) Error() string { return e.body.Error }

func badRequest(field, format string, args ...any) *httpError {
	reason := fmt.Sprintf(format, args...)
	return &httpError{code: http.StatusBadRequest, body: errorBody{Error: field + ": " + reason, Field: field, Reason: reason}}
}

func notFound(format string, args ...any) *httpError {
	return &httpError{code: http.StatusNotFound, body: errorBody{Error: fmt.Sprintf(format, args...)}}
}

// writeError chooses the status for err — the one place that does — and
// writes the JSON error body.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	var fe *catalog.FieldError
	switch {
	case errors.As(err, &he):
	case errors.Is(err, rpc.ErrUnknownOutcome):
		// Before anything else the error wraps (the not-leader of a
		// leadership lost mid-write, say): a write of unknown fate must
		// not read as one that was refused.
		he = unavailable(err, "the write may or may not have been applied: read before sending it again")
	case errors.As(err, &fe):
		he = badRequest(fe.Field, "%s", fe.Reason)
	case errors.Is(err, ErrBadConfig):
		he = &httpError{code: http.StatusBadRequest, body: errorBody{Error: oneLine(err.Error())}}
	case errors.Is(err, local.ErrUnknownService), errors.Is(err, local.ErrUnknownCheck),
		errors.Is(err, catalog.ErrNotFound):
		he = notFound("%s", oneLine(err.Error()))
	case errors.Is(err, acl.ErrPermissionDenied), errors.Is(err, rpc.ErrPermissionDenied), errors.Is(err, rpc.ErrACLNotFound):
		he = &httpError{code: http.StatusForbidden, body: errorBody{Error: oneLine(permissionText(err))}}
	case errors.Is(err, rpc.ErrACLDisabled):
		he = &httpError{code: http.StatusUnauthorized, body: errorBody{Error: rpc.ErrACLDisabled.Error()}}
	case errors.Is(err, ErrNotInWAN):
		he = badRequest("wan", "%s", oneLine(err.Error()))
	case errors.Is(err, rpc.ErrRateLimited), errors.Is(err, rpc.ErrTooManyCalls):
		he = &httpError{code: http.StatusTooManyRequests, body: errorBody{Error: oneLine(err.Error())}}
	case errors.Is(err, ErrKeyringIncomplete):
		he = unavailable(err, "not done on every pool; sending it again is safe")
	case errors.Is(err, local.ErrNotSynced):
		// Kept on this agent, which pushes it until the servers take it:
		// known to end up applied, just not yet.
		he = unavailable(err, "stored on this agent and not yet in the catalog; the agent keeps pushing it, and sending it again is safe")
	case errors.Is(err, rpc.ErrConflictingConsistency):
		he = badRequest("consistency", "%s", oneLine(err.Error()))
	case errors.Is(err, rpc.ErrUnknownDatacenter):
		// A client's error, which retrying does not cure (Consul answers
		// a 500); Consul's words first, which its clients look for.
		he = &httpError{code: http.StatusBadRequest, body: errorBody{Error: "No path to datacenter: " + oneLine(fromSentinel(err, rpc.ErrUnknownDatacenter))}}
	case errors.Is(err, rpc.ErrNoPathToDatacenter):
		// Consul's words, which its clients and tests look for.
		he = unavailable(err, "No path to datacenter")
	case errors.Is(err, rpc.ErrTransport), errors.Is(err, rpc.ErrNoLeader), errors.Is(err, rpc.ErrNotLeader), errors.Is(err, rpc.ErrServerStopping),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, rpc.ErrServerClosed), errors.Is(err, rpc.ErrPoolClosed), errors.Is(err, rpc.ErrStreamEnded):
		// No server could answer now: nothing was done, or (for the
		// idempotent writes the agent retried) retrying is safe.
		he = unavailable(err, "no server answered; retrying is safe")
	case errors.Is(err, local.ErrNotTTL):
		// Only a TTL check's status is reported from outside; the others
		// have a runner that decides it.
		he = badRequest("CheckID", "%s", oneLine(err.Error()))
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away (a page closed, a blocking query
		// abandoned): nobody reads this answer, and nothing failed.
		he = &httpError{code: statusClientClosed, body: errorBody{Error: "the client closed the request"}}
	default:
		he = &httpError{code: http.StatusInternalServerError, body: errorBody{Error: oneLine(err.Error())}}
		s.logger.Warn("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, he.code, he.body)
}

// statusClientClosed answers a request its client abandoned (nginx's
// 499): written to nobody, but kept apart from the server's failures.
const statusClientClosed = 499

// permissionText is the message of a refused request without the RPC
// method's name in front: "Permission denied: token lacks ...", as Consul
// words it.
func permissionText(err error) string {
	msg := err.Error()
	for _, s := range []error{rpc.ErrPermissionDenied, rpc.ErrACLNotFound} {
		if i := strings.Index(msg, s.Error()); i >= 0 {
			return msg[i:]
		}
	}
	return msg
}

// fromSentinel is err's message from where sentinel's text begins (the
// RPC method names before it left out), or all of it.
func fromSentinel(err, sentinel error) string {
	msg := err.Error()
	if i := strings.Index(msg, sentinel.Error()); i >= 0 {
		return msg[i:]
	}
	return msg
}

// unavailable is a 503 whose message says what became of the request
// before the error's own words.
func unavailable(err error, what string) *httpError {
	return &httpError{code: http.StatusServiceUnavailable, body: errorBody{Error: what + ": " + oneLine(err.Error())}}
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeJSONPretty writes v, indented when the request has ?pretty.
func writeJSONPretty(w http.ResponseWriter, r *http.Request, v any) {
	if _, ok := r.URL.Query()["pretty"]; ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		enc := json.NewEncoder(w)
		enc.SetIndent("", "    ")
		_ = enc.Encode(v)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// decodeBody decodes a JSON request body into v, rejecting unknown fields,
// trailing data and bodies over the configured size, each with a 400 that
// names what is wrong.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	return s.decode(w, r, v, true)
}

// decode is decodeBody, refusing unknown fields only when strict.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, strict bool) error {
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	dec := json.NewDecoder(body)
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return jsonError(err, s.cfg.MaxBodyBytes)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return jsonError(err, s.cfg.MaxBodyBytes)
		}
		return badRequest("body", "must hold exactly one JSON object")
	}
	return nil
}

func jsonError(err error, limit int64) *httpError {
	var tooBig *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &tooBig):
		return badRequest("body", "must be at most %d bytes", limit)
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return badRequest("body", "must be a JSON object, got %s", typeErr.Value)
	case errors.As(err, &typeErr):
		return badRequest(typeErr.Field, "must be a JSON %s, got %s", typeErr.Type, typeErr.Value)
	case errors.As(err, &syntax):
		return badRequest("body", "invalid JSON at byte %d: %v", syntax.Offset, err)
	case errors.Is(err, io.EOF):
		return badRequest("body", "is empty; a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("body", "JSON ends early")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if field, err := strconv.Unquote(name); err == nil && field != "" {
			return badRequest(field, "unknown field")
		}
		return badRequest("body", "unknown field %s", name)
	}
	return badRequest("body", "%v", err)
}

// boolParam reads a flag-like query parameter the way Consul does: present
// means true unless its value is one strconv.ParseBool reads as false.
func boolParam(r *http.Request, name string) bool {
	vals, ok := r.URL.Query()[name]
	if !ok {
		return false
	}
	if len(vals) == 0 || vals[0] == "" {
		return true
	}
	b, err := strconv.ParseBool(vals[0])
	return err != nil || b
}
