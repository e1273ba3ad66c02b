package cairn

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/cairndns/cairn/"

// allowedCairn lists, for each package, the cairn packages its production
// code may import (DESIGN.md, "Packages and which way imports go"). A
// package missing from the table may import nothing of cairn's; "*" means
// anything.
var allowedCairn = map[string][]string{
	"catalog":         {},
	"zones":           {"catalog"},
	"resolver":        {"zones", "catalog"},
	"gossip":          {"internal/buildinfo"},
	"rpc":             {"catalog"},
	"cache":           {"catalog", "rpc", "internal/clock"},
	"acl":             {},
	"tlsutil":         {},
	"telemetry":       {},
	"logstream":       {},
	"consensus":       {"catalog", "gossip", "rpc", "acl", "internal/diskfree", "internal/clock"},
	"agent/checks":    {"catalog"},
	"agent/local":     {"catalog", "rpc", "agent/checks", "acl", "internal/clock"},
	"agent/httpapi":   {"catalog", "rpc", "agent/local", "agent/checks", "acl", "internal/buildinfo", "internal/hostinfo", "agent/tokens"},
	"agent/config":    {"catalog", "zones", "resolver", "cache", "tlsutil", "telemetry", "acl", "agent/checks", "internal/logfile"},
	"agent/door":      {"rpc", "acl", "gossip"},
	"agent/certs":     {"agent/config", "tlsutil", "rpc", "gossip"},
	"agent/dnssource": {"cache", "catalog", "resolver", "rpc", "acl", "agent/door", "internal/clock"},
	"agent/pools":     {"gossip", "rpc", "catalog", "acl", "agent/config", "agent/door", "agent/httpapi", "internal/clock"},
	// The agent builds every part and hands each what it needs.
	"agent": {"acl", "agent/certs", "agent/checks", "agent/config", "agent/dnssource", "agent/door", "agent/events", "agent/httpapi", "agent/local", "agent/tokens",
		"agent/pools", "catalog", "consensus", "gossip", "internal/buildinfo", "internal/clock", "internal/diskfree", "internal/fdlimit", "internal/sdnotify", "logstream", "resolver", "rpc",
		"telemetry", "tlsutil", "zones"},
	"api":       {},
	"cmd/cairn": {"*"},
	".":         {},

	"internal/hostinfo": {"internal/diskfree"}, // GET /v1/agent/host
	"agent/events":      {"catalog", "rpc"},
}

// thirdPartyHome gives each third-party library the packages allowed to
// import it. hcl has three: the agent's config file and the CLI's service
// definition files, and acl's policy rules. go-bexpr evaluates the HTTP API's ?filter.
var thirdPartyHome = map[string][]string{
	"github.com/hashicorp/go-memdb":     {"catalog"},
	"github.com/hashicorp/raft":         {"consensus"},
	"github.com/hashicorp/memberlist":   {"gossip"},
	"github.com/hashicorp/serf/":        {"gossip"}, // coordinate: Vivaldi network coordinates
	"github.com/hashicorp/golang-lru":   {"cache"},
	"github.com/urfave/cli":             {"cmd/cairn"},
	"github.com/miekg/dns":              {"zones", "resolver"},
	"github.com/hashicorp/hcl":          {"agent/config", "cmd/cairn", "acl"},
	"github.com/hashicorp/go-hclog":     {"consensus"},
	"github.com/hashicorp/go-msgpack":   {"consensus", "rpc"},
	"github.com/hashicorp/raft-wal":     {"consensus"},
	"github.com/hashicorp/raft-boltdb/": {"consensus"},
	"github.com/hashicorp/go-bexpr":     {"agent/httpapi"},
	// Batched UDP reads and writes (recvmmsg, sendmmsg) and SO_REUSEPORT
	// serve DNS over UDP.
	"golang.org/x/net/": {"resolver"},
	"golang.org/x/sys/": {"resolver"},
	// The metrics registry is telemetry's; the packages that own series
	// define them and expose Collectors, which the agent registers (the
	// DNS hot path keeps its own atomics, which resolver's collector reads
	// at each scrape).
	"github.com/prometheus/":          {"telemetry", "internal/diskfree", "internal/buildinfo", "agent", "agent/httpapi", "agent/local", "agent/dnssource", "rpc", "consensus", "resolver", "cache", "gossip"},
	"github.com/hashicorp/go-metrics": {"telemetry", "gossip"},
	// Consul's Go client is a test-only dependency: the compatibility
	// tests speak to cairn through it, no production code may.
	"github.com/hashicorp/consul/": {},
}

// isTestHelper reports whether dir is a test-only package (<pkg>test or the
// end-to-end tests) or an example program under examples/ (a measuring
// tool, not part of cairn), which may import anything.
func isTestHelper(dir string) bool {
	base := filepath.Base(dir)
	return dir == "e2e" || strings.HasPrefix(dir, "examples/") || strings.HasSuffix(base, "test") && dir != "."
}

// TestImportDirections parses every non-test Go file (no go list: its
// results are cached and would hide a new import) and checks each import
// against the tables above.
func TestImportDirections(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if isTestHelper(dir) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if msg := checkImport(dir, p); msg != "" {
				t.Errorf("%s imports %s: %s", path, p, msg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkImport(dir, imp string) string {
	if target, ok := strings.CutPrefix(imp, module); ok {
		allowed, known := allowedCairn[dir]
		if !known {
			return "package " + dir + " is not in the import table of imports_test.go; add it with the imports DESIGN.md allows"
		}
		for _, a := range allowed {
			if a == "*" || a == target {
				return ""
			}
		}
		return "not allowed by DESIGN.md (" + dir + " may import " + strings.Join(allowed, ", ") + ")"
	}
	for lib, homes := range thirdPartyHome {
		if strings.HasPrefix(imp, lib) {
			for _, h := range homes {
				if h == dir {
					return ""
				}
			}
			return lib + " has its home in " + strings.Join(homes, ", ")
		}
	}
	if dir == "api" && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
		return "api uses the standard library only"
	}
	return ""
}

// TestCheckImport makes sure the rules above can fail.
func TestCheckImport(t *testing.T) {
	for _, tc := range []struct {
		dir, imp string
		ok       bool
	}{
		{"resolver", module + "zones", true},
		{"catalog", module + "zones", false},
		{"zones", module + "resolver", false},
		{"zones", "github.com/hashicorp/go-memdb", false},
		{"catalog", "github.com/hashicorp/go-memdb", true},
		{"api", "github.com/miekg/dns", false},
		{"api", "net/http", true},
		{"newpkg", module + "catalog", false},
		{"cmd/cairn", module + "agent", true},
		{"agent", "github.com/hashicorp/serf/coordinate", false},
		{"gossip", "github.com/hashicorp/serf/coordinate", true},
	} {
		if got := checkImport(tc.dir, tc.imp) == ""; got != tc.ok {
			t.Errorf("checkImport(%q, %q) allowed = %v, want %v", tc.dir, tc.imp, got, tc.ok)
		}
	}
}
