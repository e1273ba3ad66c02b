package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cairndns/cairn/resolver"
)

func dnssecCommand() *cli.Command {
	return &cli.Command{
		Name:         "dnssec",
		Usage:        "Make a DNSSEC key, and print the DS record validators need",
		UsageText:    "cairn dnssec <keygen|ds> [options]",
		OnUsageError: onUsageError("cairn dnssec"),
		Action:       groupAction("cairn dnssec"),
		Subcommands: []*cli.Command{
			{
				Name:      "keygen",
				Usage:     "Write a new DNSSEC key to a file and print its DNSKEY and DS records",
				UsageText: "cairn dnssec keygen -out FILE [-domain DOMAIN]",
				Description: "Writes a new ECDSA P-256 key (algorithm 13) to FILE, readable by its owner\n" +
					"only, refusing to replace a file. Give it to the servers as\n" +
					"dns_config.dnssec.key_file. Prints the key's DNSKEY record, its DS record\n" +
					"(for the parent zone), and a trust-anchor line for Unbound.",
				OnUsageError: onUsageError("cairn dnssec keygen"),
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "out", Usage: "the `FILE` the private key is written to"},
					domainFlag(),
				},
				Action: dnssecKeygen,
			},
			{
				Name:      "ds",
				Usage:     "Print the DS record of a key file, or of the key an agent signs with",
				UsageText: "cairn dnssec ds [-key-file FILE | -dns-addr HOST:PORT] [-domain DOMAIN]",
				Description: "With -key-file, the DS record of that key. Otherwise asks the agent's DNS\n" +
					"(default 127.0.0.1:8600) for the zone's DNSKEY, as when the servers made the\n" +
					"key themselves (dns_config.dnssec.auto).",
				OnUsageError: onUsageError("cairn dnssec ds"),
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "key-file", Usage: "a DNSSEC private key `FILE`"},
					&cli.StringFlag{Name: "dns-addr", Value: "127.0.0.1:8600", Usage: "the agent's DNS `HOST:PORT`"},
					domainFlag(),
				},
				Action: dnssecDS,
			},
		},
	}
}

func dnssecKeygen(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef(`"cairn dnssec keygen" takes no arguments`)
	}
	out := c.String("out")
	if out == "" {
		return usagef(`"cairn dnssec keygen" needs -out FILE: a private key is not printed`)
	}
	key, err := resolver.NewSigningKey()
	if err != nil {
		return err
	}
	pem, err := resolver.EncodeSigningKey(key)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists; not replacing a key", out)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(pem); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	dnskey, err := resolver.DNSKEY(c.String("domain"), key)
	if err != nil {
		return err
	}
	ds, err := resolver.DS(c.String("domain"), key)
	if err != nil {
		return err
	}
	w := c.App.Writer
	fmt.Fprintf(w, "Wrote the private key to %s (key tag %d).\n", out, dnskey.KeyTag())
	fmt.Fprintf(w, "DNSKEY: %s\n", dnskey)
	return printDS(w, ds)
}

func dnssecDS(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef(`"cairn dnssec ds" takes no arguments`)
	}
	domain := c.String("domain")
	if file := c.String("key-file"); file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		key, err := resolver.ParseSigningKey(data)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		ds, err := resolver.DS(domain, key)
		if err != nil {
			return err
		}
		return printDS(c.App.Writer, ds)
	}
	all, err := resolver.AskDS(c.String("dns-addr"), domain, 5*time.Second)
	if err != nil {
		return err
	}
	for _, ds := range all {
		if err := printDS(c.App.Writer, ds); err != nil {
			return err
		}
	}
	return nil
}

// printDS prints ds, and the line of unbound.conf that makes Unbound
// trust it (the record on one line, spaces between its fields).
func printDS(w io.Writer, ds fmt.Stringer) error {
	line := strings.Join(strings.Fields(ds.String()), " ")
	_, err := fmt.Fprintf(w, "DS: %s\nUnbound: trust-anchor: \"%s\"\n", line, line)
	return err
}
