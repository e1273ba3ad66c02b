package config

import "testing"

func TestProtocolFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want uint8
		bad  bool
	}{
		{nil, 0, false},
		{map[string]string{ProtocolEnv: "3"}, 3, false},
		{map[string]string{ProtocolEnv: "0"}, 0, true},
		{map[string]string{ProtocolEnv: "three"}, 0, true},
		{map[string]string{ProtocolEnv: "256"}, 0, true},
	} {
		got, err := ProtocolFromEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("%v: got %d, %v; want %d, error %v", tc.env, got, err, tc.want, tc.bad)
		}
	}
}
