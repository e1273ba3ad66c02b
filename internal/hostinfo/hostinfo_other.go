//go:build !linux

package hostinfo

import "errors"

var errUnsupported = errors.New("not read on this platform")

func memory() (*Memory, error) { return nil, errUnsupported }
func cpus() ([]CPU, error)     { return nil, errUnsupported }

func host() (*Host, error) { return &Host{Hostname: hostname(), OS: goOS}, nil }
