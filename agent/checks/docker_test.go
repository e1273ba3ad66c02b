package checks_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

// engineAPI serves the three calls of the Docker Engine API a docker check
// makes, on a unix socket as the daemon does (no daemon runs where the
// tests do): each exec of Cmd in container "web" prints a line on stdout
// and one on stderr and exits with the code set last.
type engineAPI struct {
	code atomic.Int32
	cmd  atomic.Value // the last Cmd, []string
}

func startEngineAPI(t *testing.T) (*engineAPI, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	e := &engineAPI{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /containers/{id}/exec", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "web" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"No such container: ` + r.PathValue("id") + `"}`))
			return
		}
		var body struct {
			Cmd                        []string
			AttachStdout, AttachStderr bool
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || !body.AttachStdout || !body.AttachStderr {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		e.cmd.Store(body.Cmd)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"Id":"exec-1"}`))
	})
	mux.HandleFunc("POST /exec/exec-1/start", func(w http.ResponseWriter, r *http.Request) {
		for _, f := range []struct {
			stream byte
			text   string
		}{{1, "to stdout\n"}, {2, "to stderr\n"}} {
			var hdr [8]byte
			hdr[0] = f.stream
			binary.BigEndian.PutUint32(hdr[4:], uint32(len(f.text)))
			_, _ = w.Write(append(hdr[:], f.text...))
		}
	})
	mux.HandleFunc("GET /exec/exec-1/json", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"ExitCode": e.code.Load(), "Running": false})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return e, "unix://" + sock
}

// A docker check runs its Args in the container through the Engine API
// and reads the exit code as a script check does.
func TestDockerCheck(t *testing.T) {
	t.Parallel()
	e, host := startEngineAPI(t)
	m, rec := newManager(t, checks.Config{EnableScriptChecks: true, DockerHost: host}, nil)
	mustAdd(t, m, checks.Definition{ID: "web", DockerContainerID: "web", Args: []string{"/bin/check", "-v"}, Interval: 50 * time.Millisecond})
	i := rec.waitFor(t, "web", 0, catalog.HealthPassing, "to stdout\nto stderr\n")
	if cmd, _ := e.cmd.Load().([]string); len(cmd) != 2 || cmd[0] != "/bin/check" || cmd[1] != "-v" {
		t.Errorf("exec Cmd: got %q, want [/bin/check -v]", cmd)
	}
	e.code.Store(1)
	i = rec.waitFor(t, "web", i, catalog.HealthWarning, "to stdout")
	e.code.Store(2)
	rec.waitFor(t, "web", i, catalog.HealthCritical, "to stderr")

	mustAdd(t, m, checks.Definition{ID: "gone", DockerContainerID: "gone", Args: []string{"/bin/true"}, Interval: 50 * time.Millisecond})
	rec.waitFor(t, "gone", 0, catalog.HealthCritical, "No such container: gone")
}

// Without a Docker daemon a docker check is critical and says why.
func TestDockerCheckWithoutDaemon(t *testing.T) {
	t.Parallel()
	host := "unix://" + filepath.Join(t.TempDir(), "none.sock")
	m, rec := newManager(t, checks.Config{EnableScriptChecks: true, DockerHost: host}, nil)
	mustAdd(t, m, checks.Definition{ID: "web", DockerContainerID: "f972c95ebf0e", Args: []string{"/bin/true"}, Interval: 50 * time.Millisecond})
	rec.waitFor(t, "web", 0, catalog.HealthCritical, "cannot reach the Docker daemon")
}

// Docker checks run programs: they need script checks enabled, and a
// command.
func TestDockerCheckRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   checks.Config
		def   checks.Definition
		field string
	}{
		{checks.Config{}, checks.Definition{ID: "d", DockerContainerID: "web", Args: []string{"/bin/true"}, Interval: time.Second}, "DockerContainerID"},
		{checks.Config{EnableScriptChecks: true}, checks.Definition{ID: "d", DockerContainerID: "web", Interval: time.Second}, "Args"},
	} {
		m, _ := newManager(t, tc.cfg, nil)
		var fe *catalog.FieldError
		if err := m.Add(tc.def); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Add(%+v) with %+v: got %v, want a FieldError on %s", tc.def, tc.cfg, err, tc.field)
		}
	}
	if err := (checks.Config{DockerHost: "/var/run/docker.sock"}).Validate(); err == nil {
		t.Error("Validate of a DockerHost without a scheme: got nil, want an error")
	}
}
