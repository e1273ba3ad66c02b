package rpc

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// exportedErrors returns the names of the exported package-level
// variables named Err… declared in the non-test Go files of the package
// in dir: the sentinels a caller may meet.
func exportedErrors(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s (%v)", dir, err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", file, err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// TestEverySentinelHasACode: every exported Err… variable of this package
// crosses the wire as itself (errors.Is finds it in what the caller
// decodes), except those that describe the caller's own call, which a
// server never sends as such. The list is read from the
// package's source, so a new sentinel without a code fails here.
func TestEverySentinelHasACode(t *testing.T) {
	sentinels := map[string]error{
		"ErrTransport":              ErrTransport,
		"ErrNotSent":                ErrNotSent,
		"ErrCodec":                  ErrCodec,
		"ErrMessageTooLarge":        ErrMessageTooLarge,
		"ErrPoolClosed":             ErrPoolClosed,
		"ErrServerClosed":           ErrServerClosed,
		"ErrNoPathToDatacenter":     ErrNoPathToDatacenter,
		"ErrRateLimited":            ErrRateLimited,
		"ErrTooManyCalls":           ErrTooManyCalls,
		"ErrUnknownOutcome":         ErrUnknownOutcome,
		"ErrServerStopping":         ErrServerStopping,
		"ErrNoLeader":               ErrNoLeader,
		"ErrNotLeader":              ErrNotLeader,
		"ErrConflictingConsistency": ErrConflictingConsistency,
		"ErrPermissionDenied":       ErrPermissionDenied,
		"ErrACLNotFound":            ErrACLNotFound,
		"ErrACLDisabled":            ErrACLDisabled,
		"ErrStreamEnded":            ErrStreamEnded,
	}
	// What a server's own shutdown is to its caller.
	arrivesAs := map[string]error{"ErrPoolClosed": ErrServerStopping, "ErrServerClosed": ErrServerStopping}
	// The caller's own call only: a server's failed hop is sent as what
	// it means (no leader, an unknown outcome), never as these; a codec
	// error or an oversized message between two servers is servers that
	// disagree, sent without a code.
	local := map[string]bool{"ErrTransport": true, "ErrNotSent": true, "ErrCodec": true, "ErrMessageTooLarge": true}

	if got, want := exportedErrors(t, "."), slices.Sorted(maps.Keys(sentinels)); !slices.Equal(got, want) {
		t.Fatalf("rpc declares the sentinels %v; this test knows %v: give a new one a wire code (sentinelCode) and add it here", got, want)
	}
	for name, s := range sentinels {
		err := fmt.Errorf("rpc Some.Method: doing something: %w", s)
		code := sentinelCode(err)
		if local[name] {
			if code != "" {
				t.Errorf("%s: has the wire code %q; a caller would take the server's hop for its own connection", name, code)
			}
			continue
		}
		want := s
		if a, ok := arrivesAs[name]; ok {
			want = a
		}
		got := newRemoteError(WireError(err).Error())
		if !errors.Is(got, want) {
			t.Errorf("%s: crosses the wire as %q (sentinel %v), want errors.Is %v", name, WireError(err).Error(), got.Sentinel, want)
		}
		if got.Message != err.Error() {
			t.Errorf("%s: message %q, want %q", name, got.Message, err.Error())
		}
	}

	// An unknown outcome keeps its code whatever else it wraps.
	err := fmt.Errorf("forward: %w: %w", ErrUnknownOutcome, ErrNotLeader)
	if got := newRemoteError(WireError(err).Error()); got.Sentinel != ErrUnknownOutcome {
		t.Errorf("unknown outcome wrapping not-leader crosses as %v, want ErrUnknownOutcome", got.Sentinel)
	}
}
