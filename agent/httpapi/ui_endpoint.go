package httpapi

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// uiFiles is the web UI: hand-written HTML, CSS and JavaScript, served as
// they are (no build step). The UI reads the cluster through the /v1 API
// from the browser, with the visitor's ACL token, so serving the files
// needs no permission.
//
//go:embed ui
var uiFiles embed.FS

// uiIndex is the page every UI path without a file of its own gets: the
// UI routes in the URL's fragment, and a path such as /ui/services (a link
// someone typed) should still land on the app.
const uiIndex = "index.html"

// uiCSP allows the page its own scripts, styles, images and API calls and
// nothing else: no inline script or style, no framing, no form posts.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// uiContentType is the type of an embedded file by its extension, set
// here rather than from the system's MIME tables, which differ between
// machines (text/javascript versus application/javascript).
func uiContentType(ext string) (string, bool) {
	switch ext {
	case ".html":
		return "text/html; charset=utf-8", true
	case ".js":
		return "text/javascript; charset=utf-8", true
	case ".css":
		return "text/css; charset=utf-8", true
	case ".svg":
		return "image/svg+xml", true
	case ".png":
		return "image/png", true
	}
	return "", false
}

// uiAsset is one embedded file, read once, with what its responses carry.
type uiAsset struct {
	body        []byte
	contentType string
	etag        string // a strong validator: the content's hash, quoted
}

// loadUI reads every embedded file into memory, keyed by its path under
// /ui/. A file of an extension without a known type is an error, so that
// adding one is caught by the tests rather than served as octets.
func loadUI() (map[string]*uiAsset, error) {
	root, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		return nil, err
	}
	assets := make(map[string]*uiAsset)
	err = fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := uiContentType(path.Ext(name))
		if !ok {
			return &fs.PathError{Op: "serve", Path: name, Err: fs.ErrInvalid}
		}
		body, err := fs.ReadFile(root, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		assets[name] = &uiAsset{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if assets[uiIndex] == nil {
		return nil, &fs.PathError{Op: "serve", Path: uiIndex, Err: fs.ErrNotExist}
	}
	return assets, nil
}

// uiAssets are the web UI's files, loaded once.
var uiAssets = sync.OnceValue(func() map[string]*uiAsset {
	assets, err := loadUI()
	if err != nil {
		// The files are compiled in, and the tests read every one: this
		// is a broken build, not a condition of the machine.
		panic("httpapi: embedded UI: " + err.Error())
	}
	return assets
})

// ui serves the web UI under /ui/.
func (s *Server) ui(w http.ResponseWriter, r *http.Request) error {
	s.serveUI(w, r, uiAssets())
	return nil
}

// uiRoot redirects exactly "/" to /ui/. Every other path the mux does
// not know keeps its JSON 404.
func (s *Server) uiRoot(w http.ResponseWriter, r *http.Request) error {
	http.Redirect(w, r, "/ui/", http.StatusFound)
	return nil
}

// serveUI answers GET and HEAD under /ui/: the embedded file the path
// names, index.html for a path that names no file (the app's own routes),
// and a 404 for a missing file with an extension (a stale script or
// stylesheet must not get HTML in its place).
func (s *Server) serveUI(w http.ResponseWriter, r *http.Request, assets map[string]*uiAsset) {
	name := strings.TrimPrefix(r.URL.Path, "/ui/")
	a := assets[name]
	if a == nil {
		if path.Ext(name) != "" {
			s.writeError(w, r, notFound("no file %s in the UI", r.URL.Path))
			return
		}
		a = assets[uiIndex]
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	// The files change only with the binary: revalidate each time (a
	// 304 thanks to the ETag), so an upgraded agent never serves a page
	// with yesterday's script.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	// ServeContent answers If-None-Match, Range and HEAD.
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}
