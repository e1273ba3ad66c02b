package hostinfo

import (
	"runtime"
	"testing"
	"time"
)

// TestCollect: on Linux every part is read, with figures that hold
// together; CollectionTime is now.
func TestCollect(t *testing.T) {
	before := time.Now().UnixNano()
	info := Collect()
	if info.CollectionTime < before || info.CollectionTime > time.Now().UnixNano() {
		t.Errorf("CollectionTime %d, want now", info.CollectionTime)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the parts are read on Linux")
	}
	if len(info.Errors) != 0 {
		t.Fatalf("got errors %v, want none", info.Errors)
	}
	if m := info.Memory; m.Total == 0 || m.Used > m.Total || m.UsedPercent < 0 || m.UsedPercent > 100 {
		t.Errorf("memory %+v does not hold together", m)
	}
	if len(info.CPU) < 1 {
		t.Errorf("got %d CPUs", len(info.CPU))
	}
	if h := info.Host; h.Hostname == "" || h.KernelVersion == "" || h.Uptime == 0 || h.OS != "linux" {
		t.Errorf("host %+v lacks its name, kernel or uptime", h)
	}
	if d := info.Disk; d.Path != "/" || d.Total == 0 || d.Used > d.Total {
		t.Errorf("disk %+v does not hold together", d)
	}
}
