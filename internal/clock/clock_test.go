package clock

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Sleep(context.Background(), time.Minute) {
			t.Errorf("Sleep with a live context: got false, want true")
		}
		if got := time.Since(start); got != time.Minute {
			t.Errorf("Sleep(1m): returned after %s", got)
		}

		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start = time.Now()
		if Sleep(ctx, time.Hour) {
			t.Errorf("Sleep with a context cancelled meanwhile: got true, want false")
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("Sleep cancelled after 1s: returned after %s", got)
		}
	})
}
