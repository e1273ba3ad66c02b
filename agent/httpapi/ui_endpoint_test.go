package httpapi_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
)

// uiSource lists the files the UI embeds, read from the directory the
// embed directive names (embed leaves out names starting with '.' or '_').
func uiSource(t *testing.T) map[string][]byte {
	t.Helper()
	files := make(map[string][]byte)
	root := os.DirFS("ui")
	err := fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if base := path.Base(name); name != "." && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		b, err := fs.ReadFile(root, name)
		files[name] = b
		return err
	})
	if err != nil {
		t.Fatalf("read ui/: %v", err)
	}
	return files
}

// wantUIHeaders checks the headers every UI file is served with.
func wantUIHeaders(t *testing.T, h http.Header, contentType string) {
	t.Helper()
	if got := h.Get("Content-Type"); got != contentType {
		t.Errorf("got Content-Type %q, want %q", got, contentType)
	}
	if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("got X-Content-Type-Options %q, want nosniff", got)
	}
	if got := h.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("got Cache-Control %q, want no-cache", got)
	}
	if h.Get("ETag") == "" {
		t.Error("got no ETag, want one")
	}
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("got Content-Security-Policy %q, want it to hold %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-") {
		t.Errorf("got Content-Security-Policy %q, want nothing unsafe in it", csp)
	}
}

func TestUIServesEveryFile(t *testing.T) {
	types := map[string]string{
		".html": "text/html; charset=utf-8",
		".js":   "text/javascript; charset=utf-8",
		".css":  "text/css; charset=utf-8",
		".svg":  "image/svg+xml",
	}
	files := uiSource(t)
	for _, want := range []string{"index.html", "app.js", "style.css"} {
		if files[want] == nil {
			t.Errorf("ui/%s is missing", want)
		}
	}
	h := newServer(t, nil, nil)
	for name, body := range files {
		t.Run(name, func(t *testing.T) {
			ct, ok := types[path.Ext(name)]
			if !ok {
				t.Fatalf("no type known for %s; add it here and to uiContentType", name)
			}
			rec := serve(h, http.MethodGet, "/ui/"+name, "")
			wantStatus(t, rec, http.StatusOK)
			wantUIHeaders(t, rec.Header(), ct)
			if rec.Body.String() != string(body) {
				t.Errorf("got a body of %d bytes, want the %d of ui/%s", rec.Body.Len(), len(body), name)
			}

			head := serve(h, http.MethodHead, "/ui/"+name, "")
			wantStatus(t, head, http.StatusOK)
			if head.Body.Len() != 0 {
				t.Errorf("HEAD: got a body of %d bytes, want none", head.Body.Len())
			}

			req := newRequest(http.MethodGet, "/ui/"+name)
			req.Header.Set("If-None-Match", rec.Header().Get("ETag"))
			if got := serveRequest(h, req); got.Code != http.StatusNotModified {
				t.Errorf("If-None-Match with the ETag: got status %d, want 304", got.Code)
			}
		})
	}
}

func TestUIPaths(t *testing.T) {
	files := uiSource(t)
	index, js := string(files["index.html"]), string(files["app.js"])
	tests := []struct {
		target   string
		code     int
		ct, body string // body "" when not compared
	}{
		{"/ui/", http.StatusOK, "text/html; charset=utf-8", index},
		{"/ui/index.html", http.StatusOK, "text/html; charset=utf-8", index},
		{"/ui/services", http.StatusOK, "text/html; charset=utf-8", index},
		{"/ui/dc1/services/web", http.StatusOK, "text/html; charset=utf-8", index},
		{"/ui/anything-unknown", http.StatusOK, "text/html; charset=utf-8", index},
		{"/ui/app.js", http.StatusOK, "text/javascript; charset=utf-8", js},
		{"/ui/app.js?v=2", http.StatusOK, "text/javascript; charset=utf-8", js},
		// A missing script or stylesheet is a 404, never the page.
		{"/ui/missing.js", http.StatusNotFound, "application/json", ""},
		{"/ui/old/style.css", http.StatusNotFound, "application/json", ""},
	}
	h := newServer(t, nil, nil)
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			rec := serve(h, http.MethodGet, tt.target, "")
			if rec.Code != tt.code {
				t.Fatalf("got status %d, want %d; body %.200s", rec.Code, tt.code, rec.Body)
			}
			if tt.code != http.StatusOK {
				body := errorBody(t, rec)
				if msg, _ := body["error"].(string); !strings.Contains(msg, strings.Split(tt.target, "?")[0]) {
					t.Errorf("got error %q, want it to name the path", msg)
				}
				return
			}
			wantUIHeaders(t, rec.Header(), tt.ct)
			if tt.body != "" && rec.Body.String() != tt.body {
				t.Errorf("got body %.80q…, want %.80q…", rec.Body, tt.body)
			}
		})
	}
}

// TestUIRootAndMethods: only exactly "/" redirects to the UI, and only a
// GET or HEAD (another method is a 405, as on every route); the UI
// answers nothing but GET and HEAD.
func TestUIRootAndMethods(t *testing.T) {
	h := newServer(t, nil, nil)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		rec := serve(h, method, "/", "")
		if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/ui/" {
			t.Errorf("%s /: got status %d, Location %q, want 302 to /ui/", method, rec.Code, rec.Header().Get("Location"))
		}
	}
	for _, method := range []string{http.MethodPut, http.MethodPost, http.MethodDelete} {
		rec := serve(h, method, "/", "")
		wantStatus(t, rec, http.StatusMethodNotAllowed)
	}
	if rec := serve(h, http.MethodGet, "/ui", ""); rec.Code/100 != 3 || rec.Header().Get("Location") != "/ui/" {
		t.Errorf("GET /ui: got status %d, Location %q, want a redirect to /ui/", rec.Code, rec.Header().Get("Location"))
	}
	for _, method := range []string{http.MethodPut, http.MethodPost, http.MethodDelete} {
		rec := serve(h, method, "/ui/app.js", "")
		wantStatus(t, rec, http.StatusMethodNotAllowed)
		if got := rec.Header().Get("Allow"); got != "GET, HEAD" {
			t.Errorf("%s /ui/app.js: got Allow %q, want \"GET, HEAD\"", method, got)
		}
		errorBody(t, rec)
	}
	// The Host check (DNS rebinding) covers the UI as every endpoint.
	req := newRequest(http.MethodGet, "/ui/")
	req.Host = "attacker.invalid"
	if rec := serveRequest(h, req); rec.Code != http.StatusForbidden {
		t.Errorf("GET /ui/ naming another host: got status %d, want 403", rec.Code)
	}
}

var (
	// htmlRef finds the attributes of index.html that load something.
	htmlRef = regexp.MustCompile(`(?i)\b(?:src|href)\s*=\s*"([^"]*)"`)
	// inlineCode finds what the Content-Security-Policy would refuse:
	// event handler attributes, style attributes and <style> elements, and
	// a <script> with a body.
	inlineCode = regexp.MustCompile(`(?is)\son[a-z]+\s*=|\sstyle\s*=|<style|<script[^>]*>\s*[^<\s]`)
	// apiPath finds the API paths app.js reads.
	apiPath = regexp.MustCompile(`"(/v1/[a-z/-]+)"`)
)

// TestUIReferences: the page loads only files the UI embeds, holds no
// code the policy would block, and the script reads only endpoints that
// exist and builds its DOM without parsing HTML.
func TestUIReferences(t *testing.T) {
	files := uiSource(t)
	index := string(files["index.html"])
	refs := htmlRef.FindAllStringSubmatch(index, -1)
	if len(refs) < 3 {
		t.Fatalf("got %d src/href attributes in index.html, want the script, the stylesheet and the icon at least", len(refs))
	}
	for _, m := range refs {
		ref := m[1]
		if strings.HasPrefix(ref, "#") {
			continue // the app's own routes
		}
		name, ok := strings.CutPrefix(ref, "/ui/")
		if !ok {
			t.Errorf("index.html refers to %q, want only /ui/<file> or #<route>", ref)
			continue
		}
		if files[name] == nil {
			t.Errorf("index.html refers to %q, which the UI does not embed", ref)
		}
	}
	if m := inlineCode.FindString(index); m != "" {
		t.Errorf("index.html holds inline code or style %q, which the Content-Security-Policy blocks", m)
	}
	js := string(files["app.js"])
	for _, banned := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(js, banned) {
			t.Errorf("app.js uses %s; build the DOM with createElement and textContent", banned)
		}
	}

	h := newServer(t, nil, nil)
	paths := apiPath.FindAllStringSubmatch(js, -1)
	if len(paths) < 5 {
		t.Fatalf("found %d API paths in app.js, want the services, health, nodes, KV and agent reads", len(paths))
	}
	for _, m := range paths {
		target := m[1]
		if strings.HasSuffix(target, "/") && target != "/v1/kv/" {
			target += "x" // a name follows
		}
		// The mux's catch-all answers exactly this; an endpoint that
		// exists may 404 too (the fake catalog holds nothing).
		rec := serve(h, http.MethodGet, target, "")
		if rec.Code != http.StatusNotFound {
			continue
		}
		if msg, _ := errorBody(t, rec)["error"].(string); msg == "no endpoint "+target {
			t.Errorf("app.js reads %s, which no endpoint serves", m[1])
		}
	}
}

func newRequest(method, target string) *http.Request {
	return httptest.NewRequest(method, target, http.NoBody)
}

func serveRequest(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
