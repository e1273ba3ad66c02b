// Package hostinfo describes the machine an agent runs on, in the shape of
// Consul's GET /v1/agent/host (which gopsutil fills there): memory, CPUs,
// the host and its root file system. It reads /proc and asks the kernel;
// it has no state and starts nothing.
package hostinfo

import (
	"os"
	"runtime"
	"time"

	"github.com/cairndns/cairn/internal/diskfree"
)

// Info is the body of GET /v1/agent/host. A part that could not be read
// is null, with the reason in Errors.
type Info struct {
	Memory         *Memory
	CPU            []CPU
	Host           *Host
	Disk           *Disk
	CollectionTime int64 // Unix nanoseconds
	Errors         []string
}

// Memory is gopsutil's VirtualMemoryStat, the fields /proc/meminfo gives.
type Memory struct {
	Total       uint64  `json:"total"`
	Available   uint64  `json:"available"`
	Used        uint64  `json:"used"`
	UsedPercent float64 `json:"usedPercent"`
	Free        uint64  `json:"free"`
	Buffers     uint64  `json:"buffers"`
	Cached      uint64  `json:"cached"`
	SwapTotal   uint64  `json:"swapTotal"`
	SwapFree    uint64  `json:"swapFree"`
}

// CPU is gopsutil's cpu.InfoStat: one logical CPU.
type CPU struct {
	CPU       int32    `json:"cpu"`
	VendorID  string   `json:"vendorId"`
	Family    string   `json:"family"`
	Model     string   `json:"model"`
	ModelName string   `json:"modelName"`
	Cores     int32    `json:"cores"`
	Mhz       float64  `json:"mhz"`
	CacheSize int32    `json:"cacheSize"`
	Flags     []string `json:"flags"`
}

// Host is gopsutil's host.InfoStat.
type Host struct {
	Hostname        string `json:"hostname"`
	Uptime          uint64 `json:"uptime"`
	BootTime        uint64 `json:"bootTime"`
	Procs           uint64 `json:"procs"`
	OS              string `json:"os"`
	Platform        string `json:"platform"`
	PlatformFamily  string `json:"platformFamily"`
	PlatformVersion string `json:"platformVersion"`
	KernelVersion   string `json:"kernelVersion"`
	KernelArch      string `json:"kernelArch"`
	HostID          string `json:"hostId"`
}

// Disk is gopsutil's disk.UsageStat of the root file system, as Consul
// reports it.
type Disk struct {
	Path        string  `json:"path"`
	Total       uint64  `json:"total"`
	Free        uint64  `json:"free"`
	Used        uint64  `json:"used"`
	UsedPercent float64 `json:"usedPercent"`
}

// diskPath is the file system Consul reports.
const diskPath = "/"

// Collect reads the machine's description now.
func Collect() *Info {
	info := &Info{CollectionTime: time.Now().UnixNano(), Errors: []string{}}
	fail := func(err error) { info.Errors = append(info.Errors, err.Error()) }
	var err error
	if info.Memory, err = memory(); err != nil {
		fail(err)
	}
	if info.CPU, err = cpus(); err != nil {
		fail(err)
	}
	if info.Host, err = host(); err != nil {
		fail(err)
	}
	if sp, err := diskfree.Of(diskPath); err != nil {
		fail(err)
	} else {
		d := &Disk{Path: diskPath, Total: sp.Total, Free: sp.Free}
		if sp.Total >= sp.Free {
			d.Used = sp.Total - sp.Free
		}
		if sp.Total > 0 {
			d.UsedPercent = 100 * float64(d.Used) / float64(sp.Total)
		}
		info.Disk = d
	}
	return info
}

// hostname is the host's name, "" when the kernel will not say.
func hostname() string {
	h, _ := os.Hostname()
	return h
}

// goOS is the OS name gopsutil reports: Go's.
const goOS = runtime.GOOS
