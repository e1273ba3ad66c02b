package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/cairndns/cairn/tlsutil"
	"github.com/urfave/cli/v2"
)

func tlsCommand() *cli.Command {
	return &cli.Command{
		Name:         "tls",
		Usage:        "Create a certificate authority and the agents' certificates for TLS",
		UsageText:    "cairn tls <ca|cert> create [options]",
		OnUsageError: onUsageError("cairn tls"),
		Action:       groupAction("cairn tls"),
		Subcommands: []*cli.Command{
			{
				Name:         "ca",
				Usage:        "Create a certificate authority",
				UsageText:    "cairn tls ca create [options]",
				OnUsageError: onUsageError("cairn tls ca"),
				Action:       groupAction("cairn tls ca"),
				Subcommands: []*cli.Command{{
					Name:      "create",
					Usage:     "Create a certificate authority in the current directory",
					UsageText: "cairn tls ca create [-domain DOMAIN] [-days DAYS] [-name-constraint]",
					Description: "Writes " + tlsutil.CAFileName + " (the CA certificate, for every agent's\n" +
						"ca_file) and " + tlsutil.CAKeyFileName + " (its private key: keep it where only\n" +
						"certificates are made) in the current directory, refusing to replace them.\n" +
						"The key is ECDSA P-256.",
					OnUsageError: onUsageError("cairn tls ca create"),
					Flags: []cli.Flag{
						domainFlag(),
						&cli.IntFlag{Name: "days", Value: tlsutil.DefaultCADays, Usage: "how many `DAYS` the CA is valid"},
						&cli.BoolFlag{Name: "name-constraint", Usage: "let the CA sign only names under the domain and localhost"},
					},
					Action: tlsCACreate,
				}},
			},
			{
				Name:         "cert",
				Usage:        "Create a certificate for a server or a client agent",
				UsageText:    "cairn tls cert create -server|-client [options]",
				OnUsageError: onUsageError("cairn tls cert"),
				Action:       groupAction("cairn tls cert"),
				Subcommands: []*cli.Command{{
					Name:  "create",
					Usage: "Create a certificate and key, signed by the CA, in the current directory",
					UsageText: "cairn tls cert create -server|-client [-dc DC] [-domain DOMAIN] [-days DAYS]\n" +
						"   [-ca FILE] [-key FILE] [-node NAME] [-additional-dnsname NAME]... [-additional-ipaddress IP]...",
					Description: "A server's certificate is for server.<dc>.<domain>, a client agent's for\n" +
						"client.<dc>.<domain>; both also for localhost and 127.0.0.1. With\n" +
						"verify_server_hostname, only a server's passes for a server. Give the\n" +
						"addresses and names HTTPS clients reach the agent by with\n" +
						"-additional-ipaddress and -additional-dnsname. The files are\n" +
						"<dc>-server-cairn-<n>.pem and <dc>-server-cairn-<n>-key.pem (or \"client\"),\n" +
						"<n> the first number free in the current directory.",
					OnUsageError: onUsageError("cairn tls cert create"),
					Flags: []cli.Flag{
						&cli.BoolFlag{Name: "server", Usage: "create a server's certificate"},
						&cli.BoolFlag{Name: "client", Usage: "create a client agent's certificate"},
						&cli.StringFlag{Name: "dc", Value: tlsutil.DefaultDatacenter, Usage: "the `DC` of the agent"},
						domainFlag(),
						&cli.IntFlag{Name: "days", Value: tlsutil.DefaultCertDays, Usage: "how many `DAYS` the certificate is valid"},
						&cli.StringFlag{Name: "ca", Value: tlsutil.CAFileName, Usage: "the CA certificate's `FILE`"},
						&cli.StringFlag{Name: "key", Value: tlsutil.CAKeyFileName, Usage: "the CA private key's `FILE`"},
						&cli.StringFlag{Name: "node", Usage: "the server's node `NAME`: adds <name>.server.<dc>.<domain> (servers only)"},
						&cli.StringSliceFlag{Name: "additional-dnsname", Usage: "another DNS `NAME` of the agent (repeatable)"},
						&cli.StringSliceFlag{Name: "additional-ipaddress", Usage: "another `IP` address of the agent (repeatable)"},
					},
					Action: tlsCertCreate,
				}},
			},
		},
	}
}

func domainFlag() cli.Flag {
	return &cli.StringFlag{Name: "domain", Value: tlsutil.DefaultDomain, Usage: "the cluster's DNS `DOMAIN`"}
}

func tlsCACreate(c *cli.Context) error {
	const path = "cairn tls ca create"
	if err := noArgs(c, path); err != nil {
		return err
	}
	days, err := positiveDays(c, path)
	if err != nil {
		return err
	}
	if err := refuseExisting(tlsutil.CAFileName, tlsutil.CAKeyFileName); err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	certPEM, keyPEM, err := tlsutil.GenerateCA(tlsutil.CAOptions{
		Domain:         c.String("domain"),
		Days:           days,
		NameConstraint: c.Bool("name-constraint"),
	})
	if err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	if err := writeFiles(c.App.Writer, tlsutil.CAFileName, certPEM, tlsutil.CAKeyFileName, keyPEM); err != nil {
		return fmt.Errorf("create CA: %w", err)
	}
	return nil
}

func tlsCertCreate(c *cli.Context) error {
	const path = "cairn tls cert create"
	if err := noArgs(c, path); err != nil {
		return err
	}
	server := c.Bool("server")
	if server == c.Bool("client") {
		return usagef("give one of -server or -client (see \"%s -h\")", path)
	}
	days, err := positiveDays(c, path)
	if err != nil {
		return err
	}
	dnsNames := c.StringSlice("additional-dnsname")
	if node := c.String("node"); node != "" {
		if !server {
			return usagef("-node is for a server's certificate; give a client's names with -additional-dnsname (see \"%s -h\")", path)
		}
		// Consul's name for one server: <node>.server.<dc>.<domain>.
		dnsNames = append([]string{node + "." + tlsutil.ServerName(c.String("dc"), c.String("domain"))}, dnsNames...)
	}
	var ips []net.IP
	for _, s := range c.StringSlice("additional-ipaddress") {
		ip := net.ParseIP(strings.TrimSpace(s))
		if ip == nil {
			return usagef("-additional-ipaddress %q is not an IP address (see \"%s -h\")", s, path)
		}
		ips = append(ips, ip)
	}
	caPEM, err := os.ReadFile(c.String("ca"))
	if err != nil {
		return fmt.Errorf("create certificate: the CA certificate (-ca): %w", err)
	}
	caKeyPEM, err := os.ReadFile(c.String("key"))
	if err != nil {
		return fmt.Errorf("create certificate: the CA key (-key): %w", err)
	}
	certPEM, keyPEM, err := tlsutil.GenerateCert(tlsutil.CertOptions{
		CA:          string(caPEM),
		CAKey:       string(caKeyPEM),
		Server:      server,
		Datacenter:  c.String("dc"),
		Domain:      c.String("domain"),
		Days:        days,
		DNSNames:    dnsNames,
		IPAddresses: ips,
	})
	if err != nil {
		return fmt.Errorf("create certificate: %w", err)
	}
	certFile, keyFile, err := tlsutil.NextCertFiles(".", c.String("dc"), server)
	if err != nil {
		return fmt.Errorf("create certificate: %w", err)
	}
	out := c.App.Writer
	if _, err := fmt.Fprintf(out, "==> Using %s and %s\n", c.String("ca"), c.String("key")); err != nil {
		return err
	}
	if err := writeFiles(out, certFile, certPEM, keyFile, keyPEM); err != nil {
		return fmt.Errorf("create certificate: %w", err)
	}
	names, err := certNames(certPEM)
	if err != nil {
		return fmt.Errorf("create certificate: %w", err)
	}
	_, err = fmt.Fprintf(out, "==> Valid for %s\n", strings.Join(names, ", "))
	return err
}

// noArgs refuses arguments to a command that takes flags only.
func noArgs(c *cli.Context, path string) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"%s -h\")", c.Args().First(), path)
	}
	return nil
}

func positiveDays(c *cli.Context, path string) (int, error) {
	days := c.Int("days")
	if days <= 0 {
		return 0, usagef("-days must be positive, got %d (see \"%s -h\")", days, path)
	}
	return days, nil
}

// refuseExisting fails when any of files exists, so that a pair is never
// half replaced.
func refuseExisting(files ...string) error {
	for _, f := range files {
		if _, err := os.Lstat(f); err == nil {
			return fmt.Errorf("%s exists; move it away or work in another directory", f)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// writeFiles writes a certificate (readable by all) and its key (by the
// owner only), neither over an existing file, and says so on out. When the
// key cannot be written the certificate is removed again, so that no
// certificate is left without its key.
func writeFiles(out io.Writer, certFile, certPEM, keyFile, keyPEM string) error {
	if err := writeNew(certFile, certPEM, 0o644); err != nil {
		return err
	}
	if err := writeNew(keyFile, keyPEM, 0o600); err != nil {
		_ = os.Remove(certFile)
		return err
	}
	_, err := fmt.Fprintf(out, "==> Saved %s\n==> Saved %s\n", certFile, keyFile)
	return err
}

// writeNew writes data to a new file at path; an existing file is an
// error and is left as it was.
func writeNew(path, data string, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.WriteString(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

// certNames lists the DNS names and IP addresses of a PEM certificate.
func certNames(certPEM string) ([]string, error) {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil {
		return nil, errors.New("the new certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	names := append([]string(nil), cert.DNSNames...)
	for _, ip := range cert.IPAddresses {
		names = append(names, ip.String())
	}
	return names, nil
}
