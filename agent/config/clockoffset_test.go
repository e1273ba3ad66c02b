package config

import (
	"strings"
	"testing"
	"time"
)

func TestClockOffsetEnv(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		want    time.Duration
		wantErr string
	}{
		{env: nil, want: 0},
		{env: map[string]string{ClockOffsetEnv: ""}, want: 0},
		{env: map[string]string{ClockOffsetEnv: "5s"}, want: 5 * time.Second},
		{env: map[string]string{ClockOffsetEnv: "-5s"}, want: -5 * time.Second},
		{env: map[string]string{ClockOffsetEnv: "5"}, wantErr: "CAIRN_TEST_CLOCK_OFFSET"},
		{env: map[string]string{ClockOffsetEnv: "soon"}, wantErr: "CAIRN_TEST_CLOCK_OFFSET"},
	} {
		got, err := ClockOffsetFromEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: got error %v, want one naming %s", tc.env, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("%v: got %v, %v, want %v", tc.env, got, err, tc.want)
		}
	}
}
