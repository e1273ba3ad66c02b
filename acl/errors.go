package acl

import (
	"errors"
	"strconv"
)

// ErrPermissionDenied is matched (with errors.Is) by every
// PermissionDeniedError. Its text is Consul's, which clients look for.
//
//lint:ignore ST1005 Consul's exact text, matched by its clients.
var ErrPermissionDenied = errors.New("Permission denied")

// ErrNotFound reports a token or policy that does not exist. Its text is
// Consul's, which clients look for.
var ErrNotFound = errors.New("ACL not found")

// PermissionDeniedError says which permission a token lacked. Resource and
// Access are the names used in rules ("service", "write"); Segment is the
// name the check was about, empty for operator, acl and keyring. AccessorID,
// when set, names the token (never its secret).
type PermissionDeniedError struct {
	Resource   string
	Access     string
	Segment    string
	AccessorID string
	// Any is set when the token holds the access on no name of the
	// resource at all: the request was refused before its body, which
	// names the one it is about, was read.
	Any bool
}

// Denied returns a *PermissionDeniedError for a check that failed, for
// example Denied("service", "write", "web"). The caller may set AccessorID
// on it through errors.As.
func Denied(resource, access, segment string) error {
	return &PermissionDeniedError{Resource: resource, Access: access, Segment: segment}
}

// DeniedAny returns a *PermissionDeniedError for a token that holds
// resource:access on no name at all, as in `lacks service:write on any
// service`.
func DeniedAny(resource, access string) error {
	return &PermissionDeniedError{Resource: resource, Access: access, Any: true}
}

// Error reads like `Permission denied: token 0d1c… lacks service:write on "web"`;
// the token's accessor ID is left out when unknown and the segment for
// resources that have none (operator, acl, keyring).
func (e *PermissionDeniedError) Error() string {
	s := "Permission denied: token "
	if e.AccessorID != "" {
		s += e.AccessorID + " "
	}
	s += "lacks " + e.Resource + ":" + e.Access
	switch {
	case isTopLevelName(e.Resource):
	case e.Any:
		s += " on any " + e.Resource
	default:
		s += " on " + strconv.Quote(e.Segment)
	}
	return s
}

// Is makes errors.Is(err, ErrPermissionDenied) true.
func (e *PermissionDeniedError) Is(target error) bool {
	return target == ErrPermissionDenied
}

// ParseError reports rules that Parse rejected. Resource is the keyword as
// written ("service_prefix"), empty when the error is about the whole input;
// Segment is the name or prefix of the block at fault.
type ParseError struct {
	Resource string
	Segment  string
	Reason   string

	// hasSegment tells an empty segment (service_prefix "") from none.
	hasSegment bool
}

// Error reads like `acl: service "web": policy "writ" is not one of read, write, deny`.
func (e *ParseError) Error() string {
	s := "acl: "
	if e.Resource != "" {
		s += e.Resource
		if e.hasSegment {
			s += " " + strconv.Quote(e.Segment)
		}
		s += ": "
	}
	return s + e.Reason
}

func isTopLevelName(resource string) bool {
	return resource == "operator" || resource == "acl" || resource == "keyring"
}
