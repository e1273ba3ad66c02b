package checks

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/cairndns/cairn/catalog"
)

// DefaultDockerHost is the Docker Engine API docker checks use when
// neither Config.DockerHost nor $DOCKER_HOST names one.
const DefaultDockerHost = "unix:///var/run/docker.sock"

// dockerProbe runs a command inside a container through the Docker Engine
// API (Consul's docker check): an exec is created, started with its
// output attached, and inspected for the exit code, which reads as a
// script check's does: 0 passing, 1 warning, anything else critical. A
// daemon that cannot be reached, or a container that does not exist, is
// critical, with the reason as the output.
type dockerProbe struct {
	host      string // the API's base URL, http://… (unix sockets through dial)
	client    *http.Client
	container string
	args      []string
	limit     int // OutputMaxSize
}

// newDockerProbe returns the probe of def through the Engine API at host
// (unix:///path, tcp://host:port or http://host:port). A host that does
// not parse is refused by Validate, so here it falls back to the default.
func newDockerProbe(def *Definition, host string) *dockerProbe {
	p := &dockerProbe{container: def.DockerContainerID, args: def.Args, limit: def.OutputMaxSize}
	tr := &http.Transport{DisableKeepAlives: true}
	if path, ok := strings.CutPrefix(host, "unix://"); ok {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}
		p.host = "http://docker"
	} else {
		p.host = "http://" + strings.TrimPrefix(strings.TrimPrefix(host, "tcp://"), "http://")
	}
	p.client = &http.Client{Transport: tr}
	return p
}

func (p *dockerProbe) probe(ctx context.Context) result {
	fail := func(format string, args ...any) result {
		return result{catalog.HealthCritical, fmt.Sprintf(format, args...)}
	}
	var created struct{ ID string }
	body := map[string]any{"AttachStdout": true, "AttachStderr": true, "Cmd": p.args}
	if err := p.call(ctx, http.MethodPost, "/containers/"+url.PathEscape(p.container)+"/exec", body, http.StatusCreated, &created); err != nil {
		return fail("docker exec in container %s: %v", p.container, err)
	}
	out := &tailBuffer{limit: p.limit}
	if err := p.start(ctx, created.ID, out); err != nil {
		return fail("docker exec in container %s: %v", p.container, err)
	}
	var inspect struct {
		ExitCode int
		Running  bool
	}
	if err := p.call(ctx, http.MethodGet, "/exec/"+url.PathEscape(created.ID)+"/json", nil, http.StatusOK, &inspect); err != nil {
		return fail("docker exec in container %s: %v", p.container, err)
	}
	switch {
	case inspect.Running:
		return fail("docker exec in container %s: still running after its output closed", p.container)
	case inspect.ExitCode == 0:
		return result{catalog.HealthPassing, out.String()}
	case inspect.ExitCode == 1:
		return result{catalog.HealthWarning, out.String()}
	}
	output := out.String()
	if output == "" {
		output = fmt.Sprintf("exit status %d", inspect.ExitCode)
	}
	return result{catalog.HealthCritical, output}
}

// start runs the exec with its output attached and copies the output,
// demultiplexed (stdout and stderr interleaved), into out.
func (p *dockerProbe) start(ctx context.Context, id string, out io.Writer) error {
	resp, err := p.do(ctx, http.MethodPost, "/exec/"+url.PathEscape(id)+"/start", map[string]any{"Detach": false, "Tty": false})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return apiError(resp)
	}
	// Each frame: a byte naming the stream, three zero bytes, the payload's
	// length (big endian), the payload.
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(resp.Body, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read output: %w", err)
		}
		if _, err := io.CopyN(out, resp.Body, int64(binary.BigEndian.Uint32(hdr[4:]))); err != nil {
			return fmt.Errorf("read output: %w", err)
		}
	}
}

func (p *dockerProbe) call(ctx context.Context, method, path string, body any, want int, reply any) error {
	resp, err := p.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return apiError(resp)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(reply); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

func (p *dockerProbe) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.host+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the Docker daemon: %w", err)
	}
	return resp, nil
}

// apiError turns an Engine API error answer into an error with its message.
func apiError(resp *http.Response) error {
	var e struct{ Message string }
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if json.Unmarshal(b, &e) != nil || e.Message == "" {
		e.Message = strings.TrimSpace(string(b))
	}
	return fmt.Errorf("the Docker daemon answered %s: %s", resp.Status, e.Message)
}

// checkDockerHost accepts the forms of DOCKER_HOST a docker check can use.
func checkDockerHost(host string) error {
	for _, prefix := range []string{"unix://", "tcp://", "http://"} {
		if rest, ok := strings.CutPrefix(host, prefix); ok && rest != "" {
			return nil
		}
	}
	return fmt.Errorf("%q: want unix:///path/to/docker.sock or tcp://host:port", host)
}
