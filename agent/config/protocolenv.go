package config

import (
	"fmt"
	"strconv"
)

// ProtocolEnv names the environment variable that makes an agent gossip
// another cairn protocol version, for tests only: "3" makes it speak and
// accept protocol 3 alone, so that an upgrade test can start a
// deliberately incompatible peer from a real binary and see it refused
// (docs/operating/upgrades.md). In-process tests set the gossip config's
// ProtocolVersion, ProtocolMin and ProtocolMax instead. It is not
// configuration: nothing but a test should set it.
const ProtocolEnv = "CAIRN_TEST_PROTOCOL"

// ProtocolFromEnv reads ProtocolEnv through lookup (os.LookupEnv): 0 when
// unset, an error naming the variable when it is not 1–255.
func ProtocolFromEnv(lookup func(string) (string, bool)) (uint8, error) {
	v, ok := lookup(ProtocolEnv)
	if !ok || v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 8)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("environment variable %s (a test-only protocol version): want 1–255, got %q", ProtocolEnv, v)
	}
	return uint8(n), nil
}
