package cache_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/cache"
)

func TestConfigValidate(t *testing.T) {
	if err := cache.DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate(): %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*cache.Config)
		want   string // in the error; "" for valid
	}{
		{"zero MaxEntries", func(c *cache.Config) { c.MaxEntries = 0 }, "MaxEntries"},
		{"negative MaxBytes", func(c *cache.Config) { c.MaxBytes = -1 }, "MaxBytes"},
		{"MaxBytes without Size", func(c *cache.Config) { c.MaxBytes = 1 << 20 }, "needs Size"},
		{"MaxBytes with Size", func(c *cache.Config) {
			c.MaxBytes, c.Size = 1<<20, func(any) int { return 0 }
		}, ""},
		{"zero IdleTimeout", func(c *cache.Config) { c.IdleTimeout = 0 }, "IdleTimeout"},
		{"zero MaxStale", func(c *cache.Config) { c.MaxStale = 0 }, "MaxStale"},
		{"negative StaleAfter", func(c *cache.Config) { c.StaleAfter = -time.Second }, "StaleAfter"},
		{"StaleAfter past MaxStale", func(c *cache.Config) { c.StaleAfter = 73 * time.Hour }, "StaleAfter"},
		{"zero StaleAfter", func(c *cache.Config) { c.StaleAfter = 0 }, ""},
		{"zero BlockingWait", func(c *cache.Config) { c.BlockingWait = 0 }, "BlockingWait"},
		{"zero FetchTimeout", func(c *cache.Config) { c.FetchTimeout = 0 }, "FetchTimeout"},
		{"zero RetryMin", func(c *cache.Config) { c.RetryMin = 0 }, "RetryMin"},
		{"RetryMax below RetryMin", func(c *cache.Config) { c.RetryMax = c.RetryMin / 2 }, "RetryMax"},
	} {
		cfg := cache.DefaultConfig()
		tc.change(&cfg)
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: got %v, want no error", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error about %s", tc.name, err, tc.want)
		}
	}
	// Every invalid field is reported, not only the first.
	err := cache.Config{}.Validate()
	for _, field := range []string{"MaxEntries", "IdleTimeout", "MaxStale", "BlockingWait", "FetchTimeout", "RetryMin", "RetryMax"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("zero Config: got %v, want %s named", err, field)
		}
	}
}
