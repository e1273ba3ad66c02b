package gossip

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/memberlist"
)

// The keyring. A pool started with a key (Config.EncryptKey, or a keyring
// file) encrypts and authenticates all its gossip with memberlist's
// keyring: the primary key encrypts, every key decrypts. Rotating a key
// without restarting anyone and without any member falling out is three
// operations, each reaching every alive member (keyring_ops.go): install
// the new key everywhere, make it primary everywhere (only once every
// member holds it), remove the old one (only once no member uses it as
// its primary).
//
// Each member tells the others which keys it holds through its metadata:
// the fingerprints of its keys, primary first (see meta.go). That is what
// ListKeys reports and what an operation waits on. A fingerprint is the
// first 4 bytes of the key's SHA-256: enough to tell a handful of keys
// apart, nothing an attacker could use, and gossiped only to members
// that hold a key already.
//
// With Config.KeyringFile set, the keyring is kept in that file, rewritten
// after every change, and loaded at start in preference to EncryptKey
// (Consul's rule: the file is the newer truth once keys have rotated). The
// file is a JSON list of the base64 keys, primary first, as Consul's
// local.keyring and remote.keyring are.

// MaxKeys is how many keys one keyring holds at most: enough for any
// rotation in progress, and the fingerprints fit memberlist's metadata.
const MaxKeys = 8

// fingerprintLen is the length of one key's fingerprint.
const fingerprintLen = 4

// fingerprint identifies a key in metadata and reports.
type fingerprint [fingerprintLen]byte

func fingerprintOf(key []byte) fingerprint {
	sum := sha256.Sum256(key)
	return fingerprint(sum[:fingerprintLen])
}

func (f fingerprint) String() string { return hex.EncodeToString(f[:]) }

// fingerprints is a member's list of key fingerprints as it gossips them,
// fingerprintLen bytes each, primary first. A string, so that metadata
// stays comparable and immutable.
type fingerprints string

func fingerprintsOf(keys [][]byte) fingerprints {
	var b strings.Builder
	for _, k := range keys {
		f := fingerprintOf(k)
		b.Write(f[:])
	}
	return fingerprints(b.String())
}

func (fps fingerprints) len() int { return len(fps) / fingerprintLen }

func (fps fingerprints) at(i int) fingerprint {
	return fingerprint([]byte(fps[i*fingerprintLen : (i+1)*fingerprintLen]))
}

// primary is the first fingerprint; ok is false for an empty list.
func (fps fingerprints) primary() (fingerprint, bool) {
	if fps.len() == 0 {
		return fingerprint{}, false
	}
	return fps.at(0), true
}

func (fps fingerprints) contains(f fingerprint) bool {
	for i := range fps.len() {
		if fps.at(i) == f {
			return true
		}
	}
	return false
}

// check reports why fps cannot be a member's list.
func (fps fingerprints) check() error {
	switch {
	case len(fps) == 0:
		return errors.New("empty key list")
	case len(fps)%fingerprintLen != 0:
		return fmt.Errorf("key list of %d bytes is not a list of %d-byte fingerprints", len(fps), fingerprintLen)
	case fps.len() > MaxKeys:
		return fmt.Errorf("%d keys, more than %d", fps.len(), MaxKeys)
	}
	return nil
}

// ParseKey decodes a gossip key written in base64 (standard encoding, with
// padding, as "cairn keygen" prints it). The error wraps ErrBadKey.
func ParseKey(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%w: not base64: %w", ErrBadKey, err)
	}
	if err := memberlist.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("%w: %d bytes, want 16, 24 or 32 (AES-128/192/256)", ErrBadKey, len(key))
	}
	return key, nil
}

func encodeKey(key []byte) string { return base64.StdEncoding.EncodeToString(key) }

// keyOp is one keyring operation.
type keyOp uint8

const (
	opInstall keyOp = iota + 1
	opUse
	opRemove
)

func (op keyOp) String() string {
	switch op {
	case opInstall:
		return "install"
	case opUse:
		return "use"
	case opRemove:
		return "remove"
	}
	return fmt.Sprintf("op(%d)", uint8(op))
}

// nextKeys returns the keyring that results from op on keys (primary
// first), and whether it differs. Installing a key held already, or
// removing one not held, changes nothing; so does using the primary key.
func nextKeys(keys [][]byte, op keyOp, key []byte) ([][]byte, bool, error) {
	i := slices.IndexFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) })
	switch op {
	case opInstall:
		if i >= 0 {
			return keys, false, nil
		}
		if len(keys) >= MaxKeys {
			return keys, false, fmt.Errorf("%w: it holds %d keys already; remove one first", ErrKeyringFull, len(keys))
		}
		return append(slices.Clip(keys), key), true, nil
	case opUse:
		if i < 0 {
			return keys, false, fmt.Errorf("%w on this member", ErrKeyNotInstalled)
		}
		if i == 0 {
			return keys, false, nil
		}
		next := append([][]byte{key}, keys[:i]...)
		return append(next, keys[i+1:]...), true, nil
	case opRemove:
		if i < 0 {
			return keys, false, nil
		}
		if i == 0 {
			return keys, false, fmt.Errorf("%w of this member; make another key primary first", ErrPrimaryKey)
		}
		return slices.Delete(slices.Clone(keys), i, i+1), true, nil
	}
	return keys, false, fmt.Errorf("unknown keyring operation %d", uint8(op))
}

// changeMemberlistKeyring makes memberlist's keyring hold next after op.
func changeMemberlistKeyring(kr *memberlist.Keyring, op keyOp, key []byte) error {
	switch op {
	case opInstall:
		return kr.AddKey(key)
	case opUse:
		return kr.UseKey(key)
	case opRemove:
		return removeKey(kr, key)
	}
	return fmt.Errorf("unknown keyring operation %d", uint8(op))
}

// removeKey removes a key that is not the primary from memberlist's
// keyring. memberlist's RemoveKey shifts the later keys down in the very
// slice that GetKeys handed to its packet and stream handlers, which may
// be decrypting with it at that moment; removing the last key shifts
// nothing. So the keys after this one are taken off from the end, this
// one (now the last) removed, and the others put back, in order: AddKey
// builds a new slice. They are missing for a few microseconds, which only
// matters to a packet that some member encrypts with one of them as its
// primary key (a rotation does not), and memberlist retries what is lost.
func removeKey(kr *memberlist.Keyring, key []byte) error {
	keys := kr.GetKeys() // memberlist's own slice: read only
	i := slices.IndexFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) })
	if i < 0 {
		return nil
	}
	after := slices.Clone(keys[i+1:])
	for j := len(after) - 1; j >= 0; j-- {
		if err := kr.RemoveKey(after[j]); err != nil {
			return err
		}
	}
	if err := kr.RemoveKey(key); err != nil {
		return err
	}
	for _, k := range after {
		if err := kr.AddKey(k); err != nil {
			return err
		}
	}
	return nil
}

// initialKeys returns the keys a pool starts with: the keyring file's when
// it exists, else EncryptKey alone (and the file is written with it), else
// none. note is set when the file overrides EncryptKey, for a log line.
func initialKeys(cfg Config) (keys [][]byte, note string, err error) {
	if cfg.KeyringFile != "" {
		keys, err = readKeyringFile(cfg.KeyringFile)
		switch {
		case err == nil:
			if len(cfg.EncryptKey) > 0 && !bytes.Equal(keys[0], cfg.EncryptKey) {
				note = "the keyring file overrides the configured encrypt key"
			}
			return keys, note, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, "", err
		}
	}
	if len(cfg.EncryptKey) == 0 {
		return nil, "", nil
	}
	keys = [][]byte{slices.Clone(cfg.EncryptKey)}
	if cfg.KeyringFile != "" {
		if err := writeKeyringFile(cfg.KeyringFile, keys); err != nil {
			return nil, "", err
		}
	}
	return keys, "", nil
}

// readKeyringFile reads a keyring file: a JSON list of base64 keys,
// primary first, without repeats, at most MaxKeys. A missing file is an
// error wrapping fs.ErrNotExist.
func readKeyringFile(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read gossip keyring: %w", err)
	}
	var encoded []string
	if err := json.Unmarshal(b, &encoded); err != nil {
		return nil, fmt.Errorf("gossip keyring %s: not a JSON list of base64 keys: %w", path, err)
	}
	if len(encoded) == 0 {
		return nil, fmt.Errorf("gossip keyring %s: holds no key", path)
	}
	if len(encoded) > MaxKeys {
		return nil, fmt.Errorf("gossip keyring %s: %d keys, more than %d", path, len(encoded), MaxKeys)
	}
	keys := make([][]byte, 0, len(encoded))
	for i, s := range encoded {
		key, err := ParseKey(s)
		if err != nil {
			return nil, fmt.Errorf("gossip keyring %s: key %d: %w", path, i, err)
		}
		if slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) }) {
			return nil, fmt.Errorf("gossip keyring %s: key %d is there twice", path, i)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// writeKeyringFile replaces the keyring file atomically: a temporary file
// in the same directory (mode 0600, the keys are secrets), synced, then
// renamed over it. The directory is created (0700) if needed.
func writeKeyringFile(path string, keys [][]byte) (err error) {
	encoded := make([]string, len(keys))
	for i, k := range keys {
		encoded[i] = encodeKey(k)
	}
	b, err := json.Marshal(encoded)
	if err != nil {
		return fmt.Errorf("encode gossip keyring: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write gossip keyring: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write gossip keyring: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("write gossip keyring: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("write gossip keyring: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write gossip keyring: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write gossip keyring: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write gossip keyring: %w", err)
	}
	// The rename is durable once the directory is synced; a failure here
	// leaves the new file in place, which is what matters.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// LocalKeys returns this member's keys in base64, primary first; nil for a
// pool without encryption.
func (p *Pool) LocalKeys() []string {
	p.keyMu.Lock()
	defer p.keyMu.Unlock()
	if len(p.keys) == 0 {
		return nil
	}
	out := make([]string, len(p.keys))
	for i, k := range p.keys {
		out[i] = encodeKey(k)
	}
	return out
}

// applyKeyOp applies op to this member's keyring: the file first (so a
// failure to write it changes nothing), then memberlist's keyring, then
// the metadata, which it re-announces.
func (p *Pool) applyKeyOp(op keyOp, key []byte) error {
	p.keyMu.Lock()
	defer p.keyMu.Unlock()
	if p.keyring == nil {
		return ErrEncryptionDisabled
	}
	next, changed, err := nextKeys(p.keys, op, key)
	if err != nil || !changed {
		return err
	}
	if p.cfg.KeyringFile != "" {
		if err := writeKeyringFile(p.cfg.KeyringFile, next); err != nil {
			return err
		}
	}
	if err := changeMemberlistKeyring(p.keyring, op, key); err != nil {
		// Not reached: nextKeys refused what memberlist would.
		return fmt.Errorf("gossip keyring %s: %w", op, err)
	}
	p.keys = next
	md := p.cfg.meta()
	md.Keys = fingerprintsOf(next)
	b, err := encodeMeta(md)
	if err != nil {
		return fmt.Errorf("gossip: encode metadata: %w", err) // not reached: Validate checked the size with MaxKeys
	}
	p.meta.Store(&b)
	p.logger.Info("gossip keyring changed", "op", op.String(), "key", fingerprintOf(key).String(), "keys", len(next))
	// Announce it. UpdateNode waits for the broadcast to go out; it
	// stays queued if that takes longer, so a short wait is enough.
	if err := p.ml.UpdateNode(p.cfg.Timing.GossipInterval); err != nil {
		p.logger.Debug("metadata update queued, not yet sent", "err", err)
	}
	return nil
}
