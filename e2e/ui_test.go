//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// uiTimeout bounds each wait for the page to show something.
const uiTimeout = 15 * time.Second

// TestUI loads the agent's web UI in Debian's headless Chromium, driven
// through chromedriver's W3C WebDriver API: the services page lists what
// the CLI registered, a registration made while the page is open appears
// without a reload (the page's blocking queries), and a service's page
// shows its instance and DNS names. Screenshots go to the test's temporary
// directory, and also to $CAIRN_UI_SCREENSHOT_DIR when it is set.
func TestUI(t *testing.T) {
	t.Parallel()
	chromium := requireTool(t, "chromium", "chromium")
	driver := requireTool(t, "chromedriver", "chromium-driver")
	a := startAgent(t, "-dev")
	addr := a.httpAddr()
	mustCLI(t, addr, "services", "register", "-name", "web", "-id", "web-1", "-port", "8080", "-tag", "v1", "-tag", "primary")
	mustCLI(t, addr, "services", "register", "-name", "db", "-id", "db-1", "-port", "5432", "-address", "10.0.0.9", "-check-ttl", "1h")
	mustCLI(t, addr, "services", "register", "-name", "cache", "-id", "cache-1", "-port", "6379", "-tag", "redis")

	wd := startWebDriver(t, driver, chromium)
	wd.navigate(t, "http://"+addr+"/ui/")
	wd.waitText(t, "#services", "web", "db", "cache", "v1", "primary")
	// The stylesheet loaded under the Content-Security-Policy: the header
	// sticks to the top as style.css says.
	if got := wd.script(t, `return getComputedStyle(document.querySelector("header.top")).position`); got != "sticky" {
		t.Errorf("header position: got %v, want sticky (style.css not applied?)", got)
	}

	// A mark on the window is gone if the page reloads.
	wd.script(t, `window.cairnTestMark = "still here"; return null`)
	mustCLI(t, addr, "services", "register", "-name", "api", "-id", "api-1", "-port", "9090", "-tag", "v2")
	wd.waitText(t, "#services", "api", "v2")
	if got := wd.script(t, `return window.cairnTestMark || ""`); got != "still here" {
		t.Fatalf("the page reloaded to show the new service (mark: got %q)", got)
	}
	wd.screenshot(t, "ui-services.png")

	wd.click(t, `a[data-service="web"]`)
	wd.waitText(t, "main", "web.service.dc1.cluster", "_web._tcp.service.dc1.cluster",
		"v1.web.service.dc1.cluster", "web-1", nodeName, ":8080")
	// What the agent's DNS answers now, asked through the agent.
	wd.waitText(t, "main", "The agent answers", "NOERROR", "IN\tSRV\t1 1 8080 "+nodeName+".node.dc1.cluster.")
	wd.screenshot(t, "ui-service.png")
}

// webDriver is a session of chromedriver's W3C WebDriver HTTP API.
type webDriver struct {
	base   string // http://127.0.0.1:<port>/session/<id>
	client *http.Client
	shots  string // where screenshots go besides $CAIRN_UI_SCREENSHOT_DIR
}

// startWebDriver runs chromedriver on a free port and opens a session of
// headless Chromium. Cleanups end the session (which quits the browser)
// and then kill chromedriver's process group, so that no browser outlives
// the test.
func startWebDriver(t *testing.T, driver, chromium string) *webDriver {
	t.Helper()
	// Made before the cleanup that kills the browser is registered, so
	// removed after it has run: nothing writes to it any more.
	profile, shots := t.TempDir(), t.TempDir()
	port := freePort(t)
	out := &syncBuffer{}
	cmd := exec.Command(driver, "--port="+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: the cleanup kills chromedriver and every
	// browser process it started, whatever state the session is in.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromedriver: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		if t.Failed() {
			t.Logf("chromedriver output:\n%s", out.String())
		}
	})

	root := "http://127.0.0.1:" + strconv.Itoa(port)
	client := &http.Client{Timeout: 30 * time.Second}
	deadline := time.Now().Add(uiTimeout)
	for {
		var status struct {
			Ready bool `json:"ready"`
		}
		if err := call(client, http.MethodGet, root+"/status", nil, &status); err == nil && status.Ready {
			break
		}
		select {
		case <-done:
			t.Fatalf("chromedriver exited before it was ready")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromedriver not ready after %v", uiTimeout)
		}
		time.Sleep(pollInterval)
	}

	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": chromium,
			"args": []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
				"--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=" + profile},
		},
	}}}
	var session struct {
		SessionID string `json:"sessionId"`
	}
	if err := call(client, http.MethodPost, root+"/session", caps, &session); err != nil {
		t.Fatalf("new WebDriver session: %v", err)
	}
	wd := &webDriver{base: root + "/session/" + session.SessionID, client: client, shots: shots}
	t.Cleanup(func() {
		if err := call(client, http.MethodDelete, wd.base, nil, nil); err != nil {
			t.Logf("end the WebDriver session: %v", err)
		}
	})
	return wd
}

// call sends one WebDriver command and decodes the "value" of its answer
// into out (when not nil). A WebDriver error is returned with its message.
func call(client *http.Client, method, url string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), client.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("%s %s: status %d, undecodable answer: %w", method, url, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error, Message string }
		_ = json.Unmarshal(env.Value, &e)
		return fmt.Errorf("%s %s: status %d: %s: %s", method, url, resp.StatusCode, e.Error, e.Message)
	}
	if out == nil || len(env.Value) == 0 {
		return nil
	}
	return json.Unmarshal(env.Value, out)
}

func (wd *webDriver) do(t *testing.T, method, path string, body, out any) {
	t.Helper()
	if err := call(wd.client, method, wd.base+path, body, out); err != nil {
		t.Fatalf("WebDriver: %v", err)
	}
}

func (wd *webDriver) navigate(t *testing.T, url string) {
	t.Helper()
	wd.do(t, http.MethodPost, "/url", map[string]string{"url": url}, nil)
}

// script runs JavaScript in the page and returns its result.
func (wd *webDriver) script(t *testing.T, js string, args ...any) any {
	t.Helper()
	if args == nil {
		args = []any{}
	}
	var v any
	wd.do(t, http.MethodPost, "/execute/sync", map[string]any{"script": js, "args": args}, &v)
	return v
}

// text is the rendered text of the first element matching the CSS
// selector, "" when there is none.
func (wd *webDriver) text(t *testing.T, selector string) string {
	t.Helper()
	v, _ := wd.script(t, `const e = document.querySelector(arguments[0]); return e ? e.innerText : ""`, selector).(string)
	return v
}

// waitText polls the text of the element matching selector until it
// holds every one of want, failing the test after uiTimeout.
func (wd *webDriver) waitText(t *testing.T, selector string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(uiTimeout)
	for {
		got := wd.text(t, selector)
		missing := ""
		for _, w := range want {
			if !strings.Contains(got, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			wd.screenshot(t, "failed.png")
			t.Fatalf("after %v, %s shows no %q; its text:\n%s\nthe page's:\n%s", uiTimeout, selector, missing, got, wd.text(t, "body"))
		}
		time.Sleep(pollInterval)
	}
}

// click clicks the first element matching the CSS selector.
func (wd *webDriver) click(t *testing.T, selector string) {
	t.Helper()
	var found map[string]string
	wd.do(t, http.MethodPost, "/element", map[string]string{"using": "css selector", "value": selector}, &found)
	// The W3C name of an element reference's key.
	id := found["element-6066-11e4-a52e-4f735466cecf"]
	if id == "" {
		t.Fatalf("WebDriver: no element reference for %s in %v", selector, found)
	}
	wd.do(t, http.MethodPost, "/element/"+id+"/click", map[string]any{}, nil)
}

// screenshot saves a PNG of the window as name in the test's temporary
// directory, and in $CAIRN_UI_SCREENSHOT_DIR when that is set.
func (wd *webDriver) screenshot(t *testing.T, name string) {
	t.Helper()
	var b64 string
	wd.do(t, http.MethodGet, "/screenshot", nil, &b64)
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screenshot: got %d bytes that are not a PNG", len(png))
	}
	dirs := []string{wd.shots}
	if d := os.Getenv("CAIRN_UI_SCREENSHOT_DIR"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		t.Logf("screenshot: %s", p)
	}
}
