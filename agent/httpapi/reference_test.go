package httpapi

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// apiReference is the reference of every HTTP endpoint, which
// TestHTTPReferenceIsComplete holds to the route table.
const apiReference = "../../docs/reference/http-api.md"

// endpointHeading is an endpoint's heading in the reference: its methods
// and its pattern as the route table writes it, in backquotes
// ("### `GET, PUT /v1/operator/autopilot/{what}`").
var endpointHeading = regexp.MustCompile("^#+ `((?:[A-Z]+, )*[A-Z]+) (/\\S*)`")

// endpointKey names one method of one route for the comparison; a
// wildcard's "..." and the root's "{$}" are left out of the pattern, so the
// reference may write /v1/kv/{key} and /.
func endpointKey(method, pattern string) string {
	pattern = strings.ReplaceAll(pattern, "...}", "}")
	pattern = strings.TrimSuffix(pattern, "{$}")
	return method + " " + pattern
}

// TestHTTPReferenceIsComplete fails when a route of the table (a method
// of it) has no entry in docs/reference/http-api.md, or the reference has
// an entry for one the table does not serve.
func TestHTTPReferenceIsComplete(t *testing.T) {
	data, err := os.ReadFile(apiReference)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for line := range strings.Lines(string(data)) {
		m := endpointHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for method := range strings.SplitSeq(m[1], ", ") {
			documented[endpointKey(method, m[2])] = true
		}
	}
	served := map[string]bool{}
	var missing, unknown []string
	for _, rt := range Routes() {
		k := endpointKey(rt.Method, rt.Pattern)
		served[k] = true
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !served[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	if len(missing) > 0 {
		t.Errorf("endpoints missing from docs/reference/http-api.md (add a heading \"### `METHOD /pattern`\" as the route table writes the pattern, with what it does):\n  %s", strings.Join(missing, "\n  "))
	}
	if len(unknown) > 0 {
		t.Errorf("docs/reference/http-api.md has entries for endpoints the route table (agent/httpapi/routes.go) does not serve (remove or fix them):\n  %s", strings.Join(unknown, "\n  "))
	}
}
