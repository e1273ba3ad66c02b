package config

import (
	"fmt"
	"time"
)

// ClockOffsetEnv names the environment variable that gives an agent
// a clock offset, for tests only: a Go duration ("5s", "-5s") by which
// the agent acts as if its wall clock were off in what its rpc server and
// pool tell peers (rpc's ClockOffset: the time in its replies, and what
// it measures others' clocks against). The fault suite (e2e/faults) runs
// a node 5s off with it, as libfaketime does not reach Go binaries;
// in-process tests set the same offset per agent (agent.SetClockOffset). It is
// not configuration: nothing but a test should set it.
const ClockOffsetEnv = "CAIRN_TEST_CLOCK_OFFSET"

// ClockOffsetFromEnv reads ClockOffsetEnv through lookup (os.LookupEnv):
// 0 when unset, an error naming the variable when it is not a duration.
func ClockOffsetFromEnv(lookup func(string) (string, bool)) (time.Duration, error) {
	v, ok := lookup(ClockOffsetEnv)
	if !ok || v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("environment variable %s (a test-only clock offset): want a duration such as \"5s\" or \"-5s\": %w", ClockOffsetEnv, err)
	}
	return d, nil
}
