package checks

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/cairndns/cairn/catalog"
)

// httpProbe fetches a URL: 2xx passing, 429 warning (the target is up but
// shedding load), anything else, or no answer within Timeout, critical.
type httpProbe struct {
	client *http.Client
	method string
	url    string
	header http.Header
	host   string // a Host header, sent as the request's Host
	body   string
	limit  int // OutputMaxSize: how much of the body is kept
}

func newHTTPProbe(d *Definition, userAgent string) *httpProbe {
	p := &httpProbe{
		method: d.Method,
		url:    d.HTTP,
		header: make(http.Header, len(d.Header)+2),
		body:   d.Body,
		limit:  d.OutputMaxSize,
	}
	for k, vs := range d.Header {
		for _, v := range vs {
			p.header.Add(k, v)
		}
	}
	p.host = p.header.Get("Host")
	p.header.Del("Host")
	if p.header.Get("User-Agent") == "" {
		p.header.Set("User-Agent", userAgent)
	}
	if p.header.Get("Accept") == "" {
		p.header.Set("Accept", "text/plain, text/*, */*") // as Consul's
	}
	// One transport per check, without keep-alives (as Consul): every run
	// opens a fresh connection, so a server that stops accepting
	// connections fails its check even while an old connection lingers,
	// and no idle connection outlives a removed check. No proxy from the
	// environment: a health check probes the service, not a proxy.
	// Redirects are followed (up to 10, net/http's default), as Consul
	// does: a health endpoint that redirects is judged by where it leads.
	tr := &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{
			InsecureSkipVerify: d.TLSSkipVerify,
			ServerName:         d.TLSServerName,
		},
	}
	p.client = &http.Client{Transport: tr}
	return p
}

func (p *httpProbe) probe(ctx context.Context) result {
	var body io.Reader
	if p.body != "" {
		body = strings.NewReader(p.body)
	}
	req, err := http.NewRequestWithContext(ctx, p.method, p.url, body)
	if err != nil {
		return result{catalog.HealthCritical, err.Error()}
	}
	req.Header = p.header.Clone()
	if p.host != "" {
		req.Host = p.host
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return result{catalog.HealthCritical, err.Error()}
	}
	defer resp.Body.Close()
	// The read is bounded by ctx too: a server that sends its headers and
	// then stalls fails on the Timeout like one that never answers.
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(p.limit)+utf8Max))
	if err != nil {
		return result{catalog.HealthCritical, fmt.Sprintf("HTTP %s %s: %s: reading the body: %v", p.method, p.url, resp.Status, err)}
	}
	out := fmt.Sprintf("HTTP %s %s: %s Output: %s", p.method, p.url, resp.Status, truncate(b, p.limit))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		return result{catalog.HealthPassing, out}
	case resp.StatusCode == http.StatusTooManyRequests:
		return result{catalog.HealthWarning, out}
	}
	return result{catalog.HealthCritical, out}
}

// utf8Max is read past the output limit so truncate can see whether the
// byte at the limit starts a rune.
const utf8Max = 4
