// Package logfile is the agent's log file (log_file): an io.Writer that
// appends to one file and rotates it by size and by age, keeping a bounded
// number of old files, with Consul's knobs and file names. It imports
// nothing of cairn's. A File is safe for concurrent use.
package logfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is the log_file group of keys.
type Config struct {
	// Path is log_file: the file the agent logs to besides stderr. A path
	// ending in a separator is a directory, in which the file is
	// cairn.log; a name without an extension gets ".log". Default "": no
	// log file.
	Path string
	// RotateBytes is log_rotate_bytes: the file is rotated once it holds
	// this many bytes. Default 0: no limit by size.
	RotateBytes int64
	// RotateDuration is log_rotate_duration: the file is rotated once it
	// is this old. Default 24h, Consul's.
	RotateDuration time.Duration
	// RotateMaxFiles is log_rotate_max_files: how many rotated files are
	// kept, the oldest removed first. Default 0: all are kept; -1: none.
	RotateMaxFiles int
}

// DefaultConfig is the log file of an agent configured with none
// (agent/config checks the values a user gives).
func DefaultConfig() Config {
	return Config{RotateDuration: 24 * time.Hour}
}

// File is an open log file. Rotation renames the current file to
// <name>-<unix nanoseconds><ext> beside it and opens a new one, as
// Consul's does.
type File struct {
	cfg  Config
	dir  string
	base string // the file's name without its extension
	ext  string

	mu      sync.Mutex
	f       *os.File
	size    int64
	created time.Time
}

// Open opens (appending to) the log file cfg names, creating its
// directory if need be.
func Open(cfg Config) (*File, error) {
	path := cfg.Path
	if strings.HasSuffix(path, string(filepath.Separator)) || strings.HasSuffix(path, "/") {
		path = filepath.Join(path, "cairn.log")
	}
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ext := filepath.Ext(name)
	if ext == "" {
		ext = ".log"
	}
	l := &File{cfg: cfg, dir: dir, base: strings.TrimSuffix(name, filepath.Ext(name)), ext: ext}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("log_file: %w", err)
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

// Name is the path of the file written to.
func (l *File) Name() string { return filepath.Join(l.dir, l.base+l.ext) }

func (l *File) open() error {
	f, err := os.OpenFile(l.Name(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("log_file: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("log_file: %w", err)
	}
	l.f, l.size, l.created = f, info.Size(), time.Now()
	return nil
}

// Write appends p, after rotating the file when it is full or old. A log
// line is never split across two files.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, os.ErrClosed
	}
	full := l.cfg.RotateBytes > 0 && l.size > 0 && l.size+int64(len(p)) > l.cfg.RotateBytes
	old := l.cfg.RotateDuration > 0 && time.Since(l.created) >= l.cfg.RotateDuration
	if full || old {
		if err := l.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// rotate moves the current file aside, opens a new one and removes the
// rotated files past RotateMaxFiles.
func (l *File) rotate() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("log_file: close for rotation: %w", err)
	}
	l.f = nil
	stamp := time.Now().UnixNano()
	aside := ""
	for { // two rotations within a tick of a coarse clock get two names
		aside = filepath.Join(l.dir, l.base+"-"+strconv.FormatInt(stamp, 10)+l.ext)
		if _, err := os.Lstat(aside); errors.Is(err, os.ErrNotExist) {
			break
		}
		stamp++
	}
	if err := os.Rename(l.Name(), aside); err != nil {
		return fmt.Errorf("log_file: rotate: %w", err)
	}
	if err := l.open(); err != nil {
		return err
	}
	return l.prune()
}

// prune removes the oldest rotated files beyond RotateMaxFiles.
func (l *File) prune() error {
	if l.cfg.RotateMaxFiles == 0 {
		return nil
	}
	rotated, err := l.Rotated()
	if err != nil {
		return err
	}
	keep := max(l.cfg.RotateMaxFiles, 0)
	for _, name := range rotated[:max(len(rotated)-keep, 0)] {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("log_file: remove an old file: %w", err)
		}
	}
	return nil
}

// Rotated lists the rotated files, oldest first.
func (l *File) Rotated() ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(l.dir, globEscape(l.base)+"-*"+globEscape(l.ext)))
	if err != nil {
		return nil, fmt.Errorf("log_file: %w", err)
	}
	var out []string
	stamps := map[string]int64{}
	for _, m := range matches {
		stamp := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), l.base+"-"), l.ext)
		ns, err := strconv.ParseInt(stamp, 10, 64)
		if err != nil {
			continue // not one of ours
		}
		stamps[m] = ns
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b string) int { return int(min(max(stamps[a]-stamps[b], -1), 1)) })
	return out, nil
}

// Close closes the file; later writes fail.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
