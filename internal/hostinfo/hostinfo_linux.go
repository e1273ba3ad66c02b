package hostinfo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// memory reads /proc/meminfo (kB) into bytes.
func memory() (*Memory, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	kv := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err == nil {
			kv[k] = n * 1024
		}
	}
	m := &Memory{Total: kv["MemTotal"], Free: kv["MemFree"], Buffers: kv["Buffers"], Cached: kv["Cached"],
		Available: kv["MemAvailable"], SwapTotal: kv["SwapTotal"], SwapFree: kv["SwapFree"]}
	if m.Total == 0 {
		return nil, errors.New("memory: /proc/meminfo has no MemTotal")
	}
	if m.Total >= m.Available {
		m.Used = m.Total - m.Available
	}
	m.UsedPercent = 100 * float64(m.Used) / float64(m.Total)
	return m, nil
}

// cpus reads /proc/cpuinfo: one entry per logical CPU.
func cpus() ([]CPU, error) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	var out []CPU
	var c *CPU
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20) // the flags line is long
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "processor" {
			n, _ := strconv.ParseInt(v, 10, 32)
			out = append(out, CPU{CPU: int32(n), Cores: 1, Flags: []string{}})
			c = &out[len(out)-1]
			continue
		}
		if c == nil {
			continue
		}
		switch k {
		case "vendor_id":
			c.VendorID = v
		case "cpu family":
			c.Family = v
		case "model":
			c.Model = v
		case "model name":
			c.ModelName = v
		case "cpu MHz":
			c.Mhz, _ = strconv.ParseFloat(v, 64)
		case "cache size":
			n, _ := strconv.ParseInt(strings.TrimSuffix(v, " KB"), 10, 32)
			c.CacheSize = int32(n)
		case "flags", "Features":
			c.Flags = strings.Fields(v)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("cpu: /proc/cpuinfo lists no processor")
	}
	return out, nil
}

// host asks the kernel for its name, version, uptime and process count.
func host() (*Host, error) {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return nil, fmt.Errorf("host: uname: %w", err)
	}
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return nil, fmt.Errorf("host: sysinfo: %w", err)
	}
	h := &Host{Hostname: hostname(), OS: goOS, KernelVersion: utsString(u.Release[:]), KernelArch: utsString(u.Machine[:]),
		Uptime: uint64(si.Uptime), Procs: uint64(si.Procs)}
	h.BootTime = uint64(time.Now().Unix()) - h.Uptime
	h.Platform, h.PlatformVersion = osRelease()
	if id, err := os.ReadFile("/etc/machine-id"); err == nil {
		h.HostID = strings.TrimSpace(string(id))
	}
	return h, nil
}

// osRelease reads the distribution's ID and VERSION_ID, "" when unknown.
func osRelease() (id, version string) {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "", ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, "=")
		v = strings.Trim(v, `"`)
		switch k {
		case "ID":
			id = v
		case "VERSION_ID":
			version = v
		}
	}
	return id, version
}

func utsString[T int8 | uint8](b []T) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
