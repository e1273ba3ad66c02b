package consulsuite_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// listFile names every test of the suite, one a line:
//
//	<package> <test> <status> <reason>
//
// package is api or watch; status is pass, fail or out; the reason is the
// rest of the line. Lines starting with # are comments.
const listFile = "api-tests.txt"

// Statuses of a test in the list.
const (
	statusPass = "pass" // passes against cairn: failing is a regression
	statusFail = "fail" // fails against cairn, for the reason given
	statusOut  = "out"  // not run: out of scope, for the reason given
)

// entry is one line of the list.
type entry struct {
	pkg, name, status, reason string
}

// list is the list file: its comment header and its entries, in order.
type list struct {
	header  []string
	entries []*entry
}

func readList(path string) (*list, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l := &list{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			if len(l.entries) == 0 {
				l.header = append(l.header, sc.Text())
			}
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want <package> <test> <status> [reason], got %q", path, n, line)
		}
		e := &entry{pkg: fields[0], name: fields[1], status: fields[2]}
		if _, ok := packages[e.pkg]; !ok {
			return nil, fmt.Errorf("%s:%d: package %q is not one of the suite's", path, n, e.pkg)
		}
		switch e.status {
		case statusPass:
		case statusFail, statusOut:
			if len(fields) == 3 {
				return nil, fmt.Errorf("%s:%d: %s %s: a test that fails or is out of scope needs its reason", path, n, e.name, e.status)
			}
		default:
			return nil, fmt.Errorf("%s:%d: status %q is not pass, fail or out", path, n, e.status)
		}
		if len(fields) > 3 {
			// The reason is the rest of the line, as written.
			rest := line
			for range 3 {
				rest = strings.TrimSpace(rest[len(strings.Fields(rest)[0]):])
			}
			e.reason = rest
		}
		l.entries = append(l.entries, e)
	}
	return l, sc.Err()
}

func (l *list) write(path string) error {
	var b strings.Builder
	for _, h := range l.header {
		b.WriteString(h + "\n")
	}
	width := 0
	for _, e := range l.entries {
		width = max(width, len(e.name))
	}
	for _, e := range l.entries {
		line := fmt.Sprintf("%-5s %-*s %-4s %s", e.pkg, width, e.name, e.status, e.reason)
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// suiteTests lists the test functions of the package in dir, sorted.
func suiteTests(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var names []string
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if ok && fd.Recv == nil && isTestFunc(fd) {
				names = append(names, fd.Name.Name)
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// isTestFunc reports whether fd is a test as go test finds them:
// TestXxx(t *testing.T).
func isTestFunc(fd *ast.FuncDecl) bool {
	name, ok := strings.CutPrefix(fd.Name.Name, "Test")
	if r, _ := utf8.DecodeRuneInString(name); !ok || unicode.IsLower(r) {
		return false
	}
	params := fd.Type.Params.List
	if len(params) != 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "T"
}
