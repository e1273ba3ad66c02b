package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"github.com/urfave/cli/v2"
)

// keygenBytes is the size of the keys keygen makes: AES-256.
const keygenBytes = 32

func keygenCommand() *cli.Command {
	return &cli.Command{
		Name:      "keygen",
		Usage:     "Print a new gossip encryption key",
		UsageText: "cairn keygen",
		Description: "Prints a new random 32-byte key, base64-encoded: the value of \"encrypt\" in\n" +
			"the agent configuration, or the key of \"cairn keyring -install\".",
		OnUsageError: onUsageError("cairn keygen"),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef(`"cairn keygen" takes no arguments`)
			}
			key, err := newGossipKey()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(c.App.Writer, key)
			return err
		},
	}
}

// newGossipKey returns a random key of keygenBytes, in base64.
func newGossipKey() (string, error) {
	key := make([]byte, keygenBytes)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("read random bytes: %w", err)
	}
	return base64.StdEncoding.EncodeToString(key), nil
}
