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

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

// persister keeps one JSON file per record (a service, a check) under dir.
// File names are the hex of the record's ID, so no ID can escape the
// directory. Writes go to a temporary file that is synced and renamed over
// the old one: a crash leaves either the old or the new record, never half
// of one.
type persister struct {
	dir  string // "" disables persistence
	kind string // "service" or "check", for messages
}

const (
	fileSuffix = ".json"
	tmpPrefix  = ".tmp-"
)

// persistedService is the on-disk form of a service: the registration
// without the Raft indexes, which belong to the catalog.
type persistedService struct {
	ID      string
	Service string
	Tags    []string          `json:",omitempty"`
	Address string            `json:",omitempty"`
	Port    int               `json:",omitempty"`
	Meta    map[string]string `json:",omitempty"`
	Weights catalog.Weights
	// TaggedAddresses are the service's (catalog.Service.TaggedAddresses).
	TaggedAddresses   map[string]catalog.ServiceAddress `json:",omitempty"`
	EnableTagOverride bool                              `json:",omitempty"`
	SocketPath        string                            `json:",omitempty"`
	Ports             []catalog.ServicePort             `json:",omitempty"`
	Locality          *catalog.Locality                 `json:",omitempty"`
	// FromConfig marks a service of the config file, which a reload (or
	// the next start) removes once the file no longer holds it.
	FromConfig bool `json:",omitempty"`
	// Token is the ACL token the service was registered with, which
	// anti-entropy syncs it with (as Consul keeps it): the file is 0600.
	Token string `json:",omitempty"`
}

// persistedCheck is the on-disk form of a check: its definition (none for
// a maintenance check, which only has a state) and its last state, which
// a TTL check starts from again after a restart.
type persistedCheck struct {
	Definition *checks.Definition `json:",omitempty"`
	Check      catalog.Check
}

func (p persister) path(id string) string {
	return filepath.Join(p.dir, hex.EncodeToString([]byte(id))+fileSuffix)
}

func (p persister) save(id string, v any) error {
	if p.dir == "" {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s %q: %w", p.kind, id, err)
	}
	if err := writeFileAtomic(p.path(id), data); err != nil {
		return fmt.Errorf("persist %s %q: %w", p.kind, id, err)
	}
	return nil
}

func (p persister) remove(id string) error {
	if p.dir == "" {
		return nil
	}
	if err := os.Remove(p.path(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove persisted %s %q: %w", p.kind, id, err)
	}
	return syncDir(p.dir)
}

// load decodes every persisted record into a new T and hands it to add
// with the ID it was filed under. A file that cannot be read or decoded is
// an error naming it: silently dropping it would lose a registration.
func load[T any](p persister, add func(fileID string, v *T) error) error {
	if p.dir == "" {
		return nil
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", p.dir, err)
	}
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", p.dir, err)
	}
	for _, e := range entries {
		path := filepath.Join(p.dir, e.Name())
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			// An interrupted write: the rename never happened, so the
			// registration it carried was never acknowledged.
			_ = os.Remove(path)
			continue
		}
		name, ok := strings.CutSuffix(e.Name(), fileSuffix)
		if e.IsDir() || !ok {
			continue
		}
		id, err := hex.DecodeString(name)
		if err != nil {
			return fmt.Errorf("%s file %s: the name is not the hex of an ID", p.kind, path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read %s file: %w", p.kind, err)
		}
		v := new(T)
		if err := json.Unmarshal(data, v); err != nil {
			return fmt.Errorf("decode %s file %s: %w", p.kind, path, err)
		}
		if err := add(string(id), v); err != nil {
			return fmt.Errorf("%s file %s: %w", p.kind, path, err)
		}
	}
	return nil
}

func saveService(p persister, svc *catalog.Service, token string, fromConfig bool) error {
	return p.save(svc.ID, persistedService{
		ID: svc.ID, Service: svc.Service, Tags: svc.Tags, Address: svc.Address,
		Port: svc.Port, Meta: svc.Meta, Weights: svc.Weights, TaggedAddresses: svc.TaggedAddresses,
		EnableTagOverride: svc.EnableTagOverride, SocketPath: svc.SocketPath, Ports: svc.Ports, Locality: svc.Locality,
		Token: token, FromConfig: fromConfig,
	})
}

// loadServices reads every persisted service, with the tokens they were
// registered with and the IDs of the config file's; each must be filed
// under its own ID.
func loadServices(p persister) ([]*catalog.Service, map[string]string, map[string]bool, error) {
	var out []*catalog.Service
	tokens := make(map[string]string)
	fromConfig := make(map[string]bool)
	err := load(p, func(fileID string, ps *persistedService) error {
		svc := &catalog.Service{
			ID: ps.ID, Service: ps.Service, Tags: ps.Tags, Address: ps.Address,
			Port: ps.Port, Meta: ps.Meta, Weights: ps.Weights, TaggedAddresses: ps.TaggedAddresses,
			EnableTagOverride: ps.EnableTagOverride, SocketPath: ps.SocketPath, Ports: ps.Ports, Locality: ps.Locality,
		}
		if err := catalog.NormalizeService(svc); err != nil {
			return err
		}
		if svc.ID != fileID {
			return fmt.Errorf("holds service %q, whose file is %s", svc.ID, p.path(svc.ID))
		}
		out = append(out, svc)
		if ps.Token != "" {
			tokens[svc.ID] = ps.Token
		}
		if ps.FromConfig {
			fromConfig[svc.ID] = true
		}
		return nil
	})
	return out, tokens, fromConfig, err
}

func saveCheck(p persister, def *checks.Definition, c *catalog.Check) error {
	cp := *c
	cp.RaftIndex = catalog.RaftIndex{}
	return p.save(c.CheckID, persistedCheck{Definition: def, Check: cp})
}

// loadChecks reads every persisted check; each must be filed under its
// own ID.
func loadChecks(p persister) ([]*persistedCheck, error) {
	var out []*persistedCheck
	err := load(p, func(fileID string, pc *persistedCheck) error {
		if pc.Check.CheckID != fileID {
			return fmt.Errorf("holds check %q, whose file is %s", pc.Check.CheckID, p.path(pc.Check.CheckID))
		}
		out = append(out, pc)
		return nil
	})
	return out, err
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
