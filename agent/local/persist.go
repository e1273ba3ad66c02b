package local

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cairndns/cairn/catalog"
)

// persister keeps one JSON file per service under dir. File names are the
// hex of the service ID, so no ID can escape the directory. Writes go to a
// temporary file that is synced and renamed over the old one: a crash leaves
// either the old or the new registration, never half of one.
type persister struct {
	dir string // "" disables persistence
}

const (
	fileSuffix = ".json"
	tmpPrefix  = ".tmp-"
)

// persistedService is the on-disk form: the registration without the Raft
// indexes, which belong to the catalog.
type persistedService struct {
	ID      string
	Service string
	Tags    []string          `json:",omitempty"`
	Address string            `json:",omitempty"`
	Port    int               `json:",omitempty"`
	Meta    map[string]string `json:",omitempty"`
	Weights catalog.Weights
}

func (p persister) path(id string) string {
	return filepath.Join(p.dir, hex.EncodeToString([]byte(id))+fileSuffix)
}

func (p persister) save(svc *catalog.Service) error {
	if p.dir == "" {
		return nil
	}
	data, err := json.Marshal(persistedService{
		ID: svc.ID, Service: svc.Service, Tags: svc.Tags, Address: svc.Address,
		Port: svc.Port, Meta: svc.Meta, Weights: svc.Weights,
	})
	if err != nil {
		return fmt.Errorf("encode service %q: %w", svc.ID, err)
	}
	if err := writeFileAtomic(p.path(svc.ID), data); err != nil {
		return fmt.Errorf("persist service %q: %w", svc.ID, err)
	}
	return nil
}

func (p persister) remove(id string) error {
	if p.dir == "" {
		return nil
	}
	if err := os.Remove(p.path(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove persisted service %q: %w", id, err)
	}
	return syncDir(p.dir)
}

// load reads every persisted service. A file that cannot be read or decoded
// is an error naming it: silently dropping it would lose a registration.
func (p persister) load() ([]*catalog.Service, error) {
	if p.dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", p.dir, err)
	}
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p.dir, err)
	}
	var out []*catalog.Service
	for _, e := range entries {
		path := filepath.Join(p.dir, e.Name())
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			// An interrupted write: the rename never happened, so the
			// registration it carried was never acknowledged.
			_ = os.Remove(path)
			continue
		}
		if e.IsDir() || !strings.HasSuffix(e.Name(), fileSuffix) {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read service file: %w", err)
		}
		var ps persistedService
		if err := json.Unmarshal(data, &ps); err != nil {
			return nil, fmt.Errorf("decode service file %s: %w", path, err)
		}
		svc := &catalog.Service{
			ID: ps.ID, Service: ps.Service, Tags: ps.Tags, Address: ps.Address,
			Port: ps.Port, Meta: ps.Meta, Weights: ps.Weights,
		}
		if err := catalog.NormalizeService(svc); err != nil {
			return nil, fmt.Errorf("service file %s: %w", path, err)
		}
		if p.path(svc.ID) != path {
			return nil, fmt.Errorf("service file %s: holds service %q, whose file is %s", path, svc.ID, p.path(svc.ID))
		}
		out = append(out, svc)
	}
	return out, nil
}

func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
