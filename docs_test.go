package cairn

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// mdHeading is a Markdown heading line.
var mdHeading = regexp.MustCompile(`(?m)^#+ (.+)$`)

// TestDocsLinks fails when a link of README.md or of a file under docs/
// points to a file of the repository that does not exist, or to a heading
// that file does not have, so that moving or renaming a page or a section
// is seen.
func TestDocsLinks(t *testing.T) {
	files := []string{"README.md"}
	err := filepath.WalkDir("docs", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{} // file → its headings' anchors
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		if data, err := os.ReadFile(path); err == nil {
			for _, m := range mdHeading.FindAllStringSubmatch(string(data), -1) {
				a[anchor(m[1])] = true
			}
		}
		anchors[path] = a
		return a
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			if path == "" {
				path = f
			} else {
				path = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: no file %s", f, target, path)
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[frag] {
				t.Errorf("%s: link %s: %s has no heading #%s", f, target, path, frag)
			}
		}
	}
}

// anchor is the fragment GitHub gives a heading: lower case, punctuation
// but hyphens and underscores dropped, spaces made hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
