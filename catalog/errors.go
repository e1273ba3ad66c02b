package catalog

import (
	"errors"
	"fmt"
)

// ErrNotFound is returned when a named node, service or check does not exist.
var ErrNotFound = errors.New("not found")

// FieldError reports one invalid field of a request: which field and why.
// HTTP handlers turn it into a 400 whose body names both.
type FieldError struct {
	Field  string // the field as the user wrote it, e.g. "Tags[1]"
	Reason string // why the value is rejected
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %s", e.Field, e.Reason)
}

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
