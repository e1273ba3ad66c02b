package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/cairndns/cairn/agent/httpapi"
)

// fakeWire answers every query with "reply:" and the query, max-age 30;
// a query starting with 'x' is not a DNS message.
type fakeWire struct {
	mu     sync.Mutex
	remote []net.Addr
}

func (f *fakeWire) ServeWire(query []byte, remote net.Addr) ([]byte, uint32, error) {
	f.mu.Lock()
	f.remote = append(f.remote, remote)
	f.mu.Unlock()
	if len(query) == 0 || query[0] == 'x' {
		return nil, 0, errors.New("not a DNS query: garbage")
	}
	return append([]byte("reply:"), query...), 30, nil
}

// TestDNSOverHTTPS checks /dns-query's status codes and headers (RFC 8484).
func TestDNSOverHTTPS(t *testing.T) {
	t.Parallel()
	off := newAPI(t, httpapi.DefaultConfig(), httpapi.Deps{})
	wire := &fakeWire{}
	s := newAPI(t, httpapi.DefaultConfig(), httpapi.Deps{ServeDNSWire: wire.ServeWire})
	query := []byte{0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'w', 'e', 'b', 0, 0, 1, 0, 1}
	get := "/dns-query?dns=" + base64.RawURLEncoding.EncodeToString(query)
	do := func(method, url, contentType string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, url, bytes.NewReader(body)) // https:// sets req.TLS
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	const https, plain = "https://127.0.0.1:8501", "http://127.0.0.1:8500"

	rec := httptest.NewRecorder()
	off.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, https+get, nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("without Deps.ServeDNSWire: got %d, want 404", rec.Code)
	}

	for _, tc := range []struct {
		name, method, url, contentType string
		body                           []byte
		want                           int
		field                          string // of a JSON error
	}{
		{name: "GET", method: http.MethodGet, url: https + get, want: http.StatusOK},
		{name: "GET padded", method: http.MethodGet, url: https + "/dns-query?dns=" + base64.URLEncoding.EncodeToString(query), want: http.StatusOK},
		{name: "POST", method: http.MethodPost, url: https + "/dns-query", contentType: "application/dns-message", body: query, want: http.StatusOK},
		{name: "POST type case", method: http.MethodPost, url: https + "/dns-query", contentType: "Application/DNS-Message; x=y", body: query, want: http.StatusOK},
		{name: "plain HTTP GET", method: http.MethodGet, url: plain + get, want: http.StatusNotFound},
		{name: "plain HTTP POST", method: http.MethodPost, url: plain + "/dns-query", contentType: "application/dns-message", body: query, want: http.StatusNotFound},
		{name: "plain HTTP PUT", method: http.MethodPut, url: plain + "/dns-query", want: http.StatusMethodNotAllowed},
		{name: "GET without dns", method: http.MethodGet, url: https + "/dns-query", want: http.StatusBadRequest, field: "dns"},
		{name: "GET not base64url", method: http.MethodGet, url: https + "/dns-query?dns=a+b/c", want: http.StatusBadRequest, field: "dns"},
		{name: "GET not DNS", method: http.MethodGet, url: https + "/dns-query?dns=" + base64.RawURLEncoding.EncodeToString([]byte("xyz")), want: http.StatusBadRequest, field: "dns"},
		{name: "POST not DNS", method: http.MethodPost, url: https + "/dns-query", contentType: "application/dns-message", body: []byte("xyz"), want: http.StatusBadRequest, field: "body"},
		{name: "POST empty", method: http.MethodPost, url: https + "/dns-query", contentType: "application/dns-message", want: http.StatusBadRequest, field: "body"},
		{name: "POST JSON", method: http.MethodPost, url: https + "/dns-query", contentType: "application/json", body: query, want: http.StatusUnsupportedMediaType, field: "Content-Type"},
		{name: "POST no type", method: http.MethodPost, url: https + "/dns-query", body: query, want: http.StatusUnsupportedMediaType, field: "Content-Type"},
		{name: "POST too big", method: http.MethodPost, url: https + "/dns-query", contentType: "application/dns-message", body: make([]byte, 70000), want: http.StatusRequestEntityTooLarge},
		{name: "PUT", method: http.MethodPut, url: https + "/dns-query", contentType: "application/dns-message", body: query, want: http.StatusMethodNotAllowed},
		{name: "DELETE", method: http.MethodDelete, url: https + get, want: http.StatusMethodNotAllowed},
	} {
		rec := do(tc.method, tc.url, tc.contentType, tc.body)
		if rec.Code != tc.want {
			t.Errorf("%s: got %d %s, want %d", tc.name, rec.Code, rec.Body, tc.want)
			continue
		}
		h := rec.Header()
		switch {
		case tc.want == http.StatusOK:
			if ct, cc := h.Get("Content-Type"), h.Get("Cache-Control"); ct != "application/dns-message" || cc != "max-age=30" {
				t.Errorf("%s: got Content-Type %q, Cache-Control %q; want application/dns-message, max-age=30", tc.name, ct, cc)
			}
			if got, want := rec.Body.String(), "reply:"+string(query); got != want {
				t.Errorf("%s: got body %q, want %q", tc.name, got, want)
			}
		case tc.want == http.StatusMethodNotAllowed:
			if allow := h.Get("Allow"); allow != "GET, POST" {
				t.Errorf("%s: got Allow %q, want \"GET, POST\"", tc.name, allow)
			}
		case tc.field != "":
			if got := errorBody(t, rec)["field"]; got != tc.field {
				t.Errorf("%s: got an error naming %v, want %q: %s", tc.name, got, tc.field, rec.Body)
			}
		}
	}
	wire.mu.Lock()
	defer wire.mu.Unlock()
	for _, r := range wire.remote {
		if r == nil || !strings.HasPrefix(r.String(), "192.0.2.1:") { // httptest's RemoteAddr
			t.Errorf("ServeWire got remote %v, want the client's address", r)
			break
		}
	}
}
