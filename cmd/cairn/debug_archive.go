package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// redacted replaces a secret in the archive.
const redacted = "<redacted>"

// secretField matches the JSON field names whose values are secrets.
var secretField = regexp.MustCompile(`(?i)token|secret|encrypt|password|private`)

// redactJSON re-indents a JSON document with the value of every field
// named like a secret replaced (every string within it, for an object or
// a list). "true" and "false" are kept: such a field is a flag saying
// whether something is set ("encrypted"), not the secret.
func redactJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode the agent's configuration: %w", err)
	}
	v = redactValue(v, false)
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the agent's configuration: %w", err)
	}
	return append(out, '\n'), nil
}

// redactValue returns v with its secrets replaced; secret says v itself
// sits under a secret's name.
func redactValue(v any, secret bool) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = redactValue(x, secret || secretField.MatchString(k))
		}
	case []any:
		for i, x := range t {
			t[i] = redactValue(x, secret)
		}
	case string:
		if secret && t != "" && t != "true" && t != "false" {
			return redacted
		}
	}
	return v
}

// write writes the archive cairn-debug-<time>.tar.gz in dir, its files
// under a directory of the same name with index.json first, and returns
// its path. An archive of that name already there is not replaced.
func (b *debugBundle) write(dir string) (path string, err error) {
	name := "cairn-debug-" + b.started.Format("20060102T150405Z")
	path = filepath.Join(dir, name+".tar.gz")
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range b.files {
		b.index.Files = append(b.index.Files, f.name)
	}
	index, err := json.MarshalIndent(b.index, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode index.json: %w", err)
	}
	if b.token != "" {
		index = []byte(strings.ReplaceAll(string(index), b.token, redacted))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("create the archive: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	files := append([]debugFile{{"index.json", append(index, '\n')}}, b.files...)
	for _, file := range files {
		hdr := &tar.Header{Name: name + "/" + file.name, Mode: 0o600, Size: int64(len(file.data)), ModTime: b.started, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return "", errors.Join(fmt.Errorf("write %s: %w", path, err), f.Close())
		}
		if _, err := tw.Write(file.data); err != nil {
			return "", errors.Join(fmt.Errorf("write %s: %w", path, err), f.Close())
		}
	}
	if err := errors.Join(tw.Close(), gz.Close()); err != nil {
		return "", errors.Join(fmt.Errorf("write %s: %w", path, err), f.Close())
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
