package loopback

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/cairndns/cairn/tlsutil"
)

// TLSServer is one cairn server process of a datacenter of one whose
// server port requires mutual TLS, and the TLS of a client agent of it:
// what the benches of the server port (tlsidle, rpcflood) measure.
type TLSServer struct {
	Addr   string // the server port, IP:8300
	Client *tlsutil.Configurator
	Log    string // the server's log file
	cmd    *exec.Cmd
}

// StartTLSServer writes a CA, a server and a client certificate and the
// server's configuration (TLS required, then extraHCL) into work, and
// starts bin as that server on ip. Stop ends it.
func StartTLSServer(ctx context.Context, bin, work, ip, logLevel, extraHCL string) (*TLSServer, error) {
	caPEM, caKey, err := tlsutil.GenerateCA(tlsutil.CAOptions{})
	if err != nil {
		return nil, err
	}
	files := map[string]string{tlsutil.CAFileName: caPEM}
	for _, c := range []struct {
		name   string
		server bool
	}{{"server", true}, {"client", false}} {
		cert, key, err := tlsutil.GenerateCert(tlsutil.CertOptions{CA: caPEM, CAKey: caKey, Server: c.server, Datacenter: "dc1"})
		if err != nil {
			return nil, err
		}
		files[c.name+".pem"], files[c.name+"-key.pem"] = cert, key
	}
	files["server.hcl"] = fmt.Sprintf(`tls {
  defaults {
    ca_file = %q
    cert_file = %q
    key_file = %q
    verify_incoming = true
    verify_outgoing = true
  }
  internal_rpc { verify_server_hostname = true }
}
`, filepath.Join(work, tlsutil.CAFileName), filepath.Join(work, "server.pem"), filepath.Join(work, "server-key.pem")) + extraHCL
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(data), 0o600); err != nil {
			return nil, err
		}
	}
	client, err := tlsutil.NewConfigurator(tlsutil.Config{
		CAFile: filepath.Join(work, tlsutil.CAFileName), CertFile: filepath.Join(work, "client.pem"), KeyFile: filepath.Join(work, "client-key.pem"),
		VerifyOutgoing: true, VerifyServerHostname: true, Datacenter: "dc1", Domain: "cluster", MinVersion: "tls12",
	})
	if err != nil {
		return nil, err
	}
	s := &TLSServer{Addr: ip + ":8300", Client: client, Log: filepath.Join(work, "server.log")}
	logf, err := os.Create(s.Log)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own descriptor
	s.cmd = exec.CommandContext(ctx, bin, "agent", "-server", "-node", "s1", "-bind", ip, "-client", ip,
		"-data-dir", filepath.Join(work, "data"), "-config-file", filepath.Join(work, "server.hcl"), "-log-level", logLevel)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return s, nil
}

// PID is the server process's.
func (s *TLSServer) PID() int { return s.cmd.Process.Pid }

// Stop kills the server and waits for it.
func (s *TLSServer) Stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}
