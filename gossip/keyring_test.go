package gossip_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
)

// encrypted returns a LAN config for node in dc1 with key, keeping its
// keyring in dir (none when dir is "").
//
// Its probes are patient (a member is suspected after 400ms without an
// ack, declared failed seconds later), unlike FastTiming's: these tests
// fail when any member is ever seen failed, and a busy machine running
// tests under the race detector must not fail them. A member cut off by
// a wrong key stays cut off, and is seen failed all the same.
func encrypted(t *testing.T, node string, role gossip.Role, key []byte, dir string) gossip.Config {
	t.Helper()
	cfg := gossiptest.LANConfig(node, "dc1", role)
	cfg.Timing.ProbeInterval, cfg.Timing.ProbeTimeout, cfg.Timing.SuspicionMult = 500*time.Millisecond, 400*time.Millisecond, 4
	cfg.EncryptKey = key
	if dir != "" {
		cfg.KeyringFile = filepath.Join(dir, "gossip", "lan.keyring")
	}
	return cfg
}

func opCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// wantReport checks a keyring report's counts.
func wantReport(t *testing.T, step string, got gossip.KeyringReport, keys, primary map[string]int, nodes int) {
	t.Helper()
	if !maps.Equal(got.Keys, keys) || !maps.Equal(got.PrimaryKeys, primary) || got.NumNodes != nodes || len(got.Messages) != 0 {
		t.Errorf("%s: got keys %v, primary %v, %d nodes, messages %v; want keys %v, primary %v, %d nodes, no messages",
			step, got.Keys, got.PrimaryKeys, got.NumNodes, got.Messages, keys, primary, nodes)
	}
}

func readKeyring(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return keys
}

// TestKeyRotation rotates the key of a pool of four (install, use,
// remove, each started from another member): every member follows every
// step, none is ever seen failed or left, the reports count right, the
// keyring files follow; a member with only the old key can no longer
// join, one with the new key can.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := gossiptest.RawKey(t), gossiptest.NewKey(t)
	oldB64 := keyString(oldKey)
	var pools []*gossip.Pool
	var files []string
	for i, node := range []string{"s1", "c1", "c2", "c3"} {
		role := gossip.RoleClient
		if i == 0 {
			role = gossip.RoleServer
		}
		cfg := encrypted(t, node, role, oldKey, t.TempDir())
		files = append(files, cfg.KeyringFile)
		p := gossiptest.Start(t, cfg)
		if i > 0 {
			gossiptest.Join(t, p, pools[0])
		}
		pools = append(pools, p)
	}
	for _, p := range pools {
		gossiptest.WaitStatus(t, wait, p.LocalMember().Name, gossip.StatusAlive, pools...)
	}
	watch := gossiptest.WatchMembers(t, pools...)

	list, err := pools[3].ListKeys(opCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	wantReport(t, "before", list, map[string]int{oldB64: 4}, map[string]int{oldB64: 4}, 4)

	r, err := pools[1].InstallKey(opCtx(t), newKey)
	if err != nil {
		t.Fatalf("InstallKey: %v (report %+v)", err, r)
	}
	wantReport(t, "install", r, map[string]int{oldB64: 4, newKey: 4}, map[string]int{oldB64: 4}, 4)
	r, err = pools[2].UseKey(opCtx(t), newKey)
	if err != nil {
		t.Fatalf("UseKey: %v (report %+v)", err, r)
	}
	wantReport(t, "use", r, map[string]int{oldB64: 4, newKey: 4}, map[string]int{newKey: 4}, 4)
	r, err = pools[0].RemoveKey(opCtx(t), oldB64)
	if err != nil {
		t.Fatalf("RemoveKey: %v (report %+v)", err, r)
	}
	wantReport(t, "remove", r, map[string]int{newKey: 4}, map[string]int{newKey: 4}, 4)
	for i, p := range pools {
		if got := p.LocalKeys(); !slices.Equal(got, []string{newKey}) {
			t.Errorf("%s holds %v, want only the new key", p.LocalMember().Name, got)
		}
		if got := readKeyring(t, files[i]); !slices.Equal(got, []string{newKey}) {
			t.Errorf("%s: keyring file holds %v, want only the new key", p.LocalMember().Name, got)
		}
		// The others' metadata reaches each member within a few
		// gossip rounds; the initiator waited for it already.
		gossiptest.WaitFor(t, wait, func() error {
			list, err := p.ListKeys(opCtx(t))
			if err != nil {
				return err
			}
			want := map[string]int{newKey: 4}
			if !maps.Equal(list.Keys, want) || !maps.Equal(list.PrimaryKeys, want) || list.NumNodes != 4 || len(list.Messages) != 0 {
				return fmt.Errorf("%s lists %+v, want the new key on all 4", p.LocalMember().Name, list)
			}
			return nil
		})
	}

	// Gossip keeps going over the new key for a few probe rounds with
	// nobody failing.
	gossiptest.WaitFor(t, wait, func() error {
		if got := pools[0].LocalMember(); got.Status != gossip.StatusAlive {
			return fmt.Errorf("s1 is %v", got.Status)
		}
		return nil
	})
	if bad := watch.NotAlive(); len(bad) > 0 {
		t.Errorf("members fell out during the rotation: %v", bad)
	}

	stale := gossiptest.Start(t, encrypted(t, "c4", gossip.RoleClient, oldKey, ""))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if n, err := stale.Join(ctx, []string{gossiptest.Addr(pools[0])}); err == nil {
		t.Errorf("a member with the old key joined %d members", n)
	}
	fresh := encrypted(t, "c5", gossip.RoleClient, nil, "")
	fresh.EncryptKey, _ = gossip.ParseKey(newKey)
	gossiptest.Join(t, gossiptest.Start(t, fresh), pools[0])
	gossiptest.WaitStatus(t, wait, "c5", gossip.StatusAlive, pools...)
	if got := gossiptest.Status(pools[0], "c4"); got != 0 {
		t.Errorf("s1 sees the member with the old key as %v, want not at all", got)
	}
}

func keyString(key []byte) string {
	r, _ := json.Marshal(key) // base64 in quotes
	return strings.Trim(string(r), `"`)
}

// writeKeyring writes a keyring file holding keys, primary first.
func writeKeyring(t *testing.T, path string, keys ...string) {
	t.Helper()
	b, _ := json.Marshal(keys)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestKeyringRefusals: an operation that would cut a member off, a bad
// key, a full keyring and a pool without encryption are refused before
// anything changes; a member holding a key this one lacks is reported by
// fingerprint.
func TestKeyringRefusals(t *testing.T) {
	t.Parallel()
	k1, k2 := gossiptest.RawKey(t), gossiptest.NewKey(t)
	k1s := keyString(k1)
	// a holds k1 (primary) and k2, b only k1.
	aCfg := encrypted(t, "a", gossip.RoleServer, k1, t.TempDir())
	writeKeyring(t, aCfg.KeyringFile, k1s, k2)
	a := gossiptest.Start(t, aCfg)
	b := gossiptest.Start(t, encrypted(t, "b", gossip.RoleClient, k1, ""))
	gossiptest.Join(t, b, a)
	gossiptest.WaitStatus(t, wait, "b", gossip.StatusAlive, a, b)
	gossiptest.WaitStatus(t, wait, "a", gossip.StatusAlive, a, b)

	for _, tc := range []struct {
		name string
		do   func() (gossip.KeyringReport, error)
		want error
		text string
	}{
		{"use a key b lacks", func() (gossip.KeyringReport, error) { return a.UseKey(opCtx(t), k2) }, gossip.ErrKeyNotInstalled, "on b"},
		{"use a key this member lacks", func() (gossip.KeyringReport, error) { return b.UseKey(opCtx(t), k2) }, gossip.ErrKeyNotInstalled, "this member (b)"},
		{"remove the local primary", func() (gossip.KeyringReport, error) { return a.RemoveKey(opCtx(t), k1s) }, gossip.ErrPrimaryKey, "this member (a)"},
		{"not base64", func() (gossip.KeyringReport, error) { return a.InstallKey(opCtx(t), "not base64!") }, gossip.ErrBadKey, "base64"},
		{"10 bytes", func() (gossip.KeyringReport, error) { return a.InstallKey(opCtx(t), "MDEyMzQ1Njc4OQ==") }, gossip.ErrBadKey, "10 bytes"},
	} {
		_, err := tc.do()
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: got %v, want %v mentioning %q", tc.name, err, tc.want, tc.text)
		}
	}
	// A key only a holds shows in b's list by its fingerprint.
	sum := sha256.Sum256(mustKey(t, k2))
	r, err := b.ListKeys(opCtx(t))
	if err != nil || r.NumNodes != 2 || r.Keys[k1s] != 2 || r.PrimaryKeys[k1s] != 2 || len(r.Keys) != 1 ||
		!strings.Contains(r.Messages["a"], hex.EncodeToString(sum[:4])) {
		t.Errorf("b lists %+v, %v; want k1 on 2 nodes and a message that a holds %x", r, err, sum[:4])
	}
	// Nothing changed in the refusals.
	if got := a.LocalKeys(); !slices.Equal(got, []string{k1s, k2}) {
		t.Errorf("a holds %v after the refusals, want k1, k2", got)
	}

	// With k2 on both and primary on a, a cannot remove k1, b's primary.
	if _, err := b.InstallKey(opCtx(t), k2); err != nil {
		t.Fatal(err)
	}
	if _, err := a.UseKey(opCtx(t), k2); err != nil {
		t.Fatal(err)
	}
	if got := b.LocalKeys(); !slices.Equal(got, []string{k2, k1s}) {
		t.Fatalf("b holds %v after use, want k2, k1", got)
	}

	// A full keyring refuses another key.
	solo := gossiptest.Start(t, encrypted(t, "solo", gossip.RoleClient, k1, ""))
	for range gossip.MaxKeys - 1 {
		if _, err := solo.InstallKey(opCtx(t), gossiptest.NewKey(t)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := solo.InstallKey(opCtx(t), gossiptest.NewKey(t)); !errors.Is(err, gossip.ErrKeyringFull) {
		t.Errorf("installing key %d: got %v, want ErrKeyringFull", gossip.MaxKeys+1, err)
	}

	plain := gossiptest.Start(t, gossiptest.LANConfig("p", "dc1", gossip.RoleClient))
	if _, err := plain.ListKeys(opCtx(t)); !errors.Is(err, gossip.ErrEncryptionDisabled) {
		t.Errorf("ListKeys without encryption: got %v, want ErrEncryptionDisabled", err)
	}
	if _, err := plain.InstallKey(opCtx(t), k2); !errors.Is(err, gossip.ErrEncryptionDisabled) {
		t.Errorf("InstallKey without encryption: got %v, want ErrEncryptionDisabled", err)
	}
}

func mustKey(t *testing.T, s string) []byte {
	t.Helper()
	k, err := gossip.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKeyringRemoveRemotePrimaryRefused: a key that another member still
// encrypts with is not removed, and the error names that member.
func TestKeyringRemoveRemotePrimaryRefused(t *testing.T) {
	t.Parallel()
	k1, k2 := gossiptest.RawKey(t), gossiptest.NewKey(t)
	k1s := keyString(k1)
	aCfg := encrypted(t, "a", gossip.RoleServer, k1, t.TempDir())
	writeKeyring(t, aCfg.KeyringFile, k2, k1s) // a encrypts with k2 already
	a := gossiptest.Start(t, aCfg)
	bCfg := encrypted(t, "b", gossip.RoleClient, k1, t.TempDir())
	writeKeyring(t, bCfg.KeyringFile, k1s, k2)
	b := gossiptest.Start(t, bCfg)
	gossiptest.Join(t, b, a)
	gossiptest.WaitStatus(t, wait, "b", gossip.StatusAlive, a, b)
	gossiptest.WaitStatus(t, wait, "a", gossip.StatusAlive, a, b)
	if _, err := a.RemoveKey(opCtx(t), k1s); !errors.Is(err, gossip.ErrPrimaryKey) || !strings.Contains(err.Error(), "of b") {
		t.Errorf("removing b's primary key: got %v, want ErrPrimaryKey naming b", err)
	}
	if got := b.LocalKeys(); !slices.Equal(got, []string{k1s, k2}) {
		t.Errorf("b holds %v, want k1, k2 untouched", got)
	}
}

// TestKeyringMemberFailureReported: a member that cannot apply an
// operation (here: its keyring file cannot be written) says why, and the
// initiator reports it by name, with the others done.
func TestKeyringMemberFailureReported(t *testing.T) {
	t.Parallel()
	key := gossiptest.RawKey(t)
	a := gossiptest.Start(t, encrypted(t, "a", gossip.RoleServer, key, ""))
	bCfg := encrypted(t, "b", gossip.RoleClient, key, t.TempDir())
	b := gossiptest.Start(t, bCfg)
	c := gossiptest.Start(t, encrypted(t, "c", gossip.RoleClient, key, ""))
	gossiptest.Join(t, b, a)
	gossiptest.Join(t, c, a)
	for _, name := range []string{"a", "b", "c"} {
		gossiptest.WaitStatus(t, wait, name, gossip.StatusAlive, a, b, c)
	}
	// b's keyring directory becomes a file: b can no longer write it.
	dir := filepath.Dir(bCfg.KeyringFile)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	newKey := gossiptest.NewKey(t)
	r, err := a.InstallKey(opCtx(t), newKey)
	if !errors.Is(err, gossip.ErrKeyringIncomplete) || !strings.Contains(err.Error(), "b: ") {
		t.Errorf("install with b failing: got %v, want ErrKeyringIncomplete naming b", err)
	}
	if !strings.Contains(r.Messages["b"], "write gossip keyring") || len(r.Messages) != 1 || r.Keys[newKey] != 2 {
		t.Errorf("report %+v; want the new key on a and c, and why b failed", r)
	}
	if got := b.LocalKeys(); len(got) != 1 {
		t.Errorf("b holds %v, want its one key: nothing changes when the file cannot be written", got)
	}
}

// TestKeyringRestart: a member restarted with its keyring file comes back
// with the rotated keyring even though its config still names the old
// key, and rejoins.
func TestKeyringRestart(t *testing.T) {
	t.Parallel()
	oldKey, newKey := gossiptest.RawKey(t), gossiptest.NewKey(t)
	a := gossiptest.Start(t, encrypted(t, "a", gossip.RoleServer, oldKey, t.TempDir()))
	bCfg := encrypted(t, "b", gossip.RoleClient, oldKey, t.TempDir())
	b, err := gossip.New(bCfg, gossiptest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	gossiptest.Join(t, b, a)
	gossiptest.WaitStatus(t, wait, "b", gossip.StatusAlive, a, b)
	gossiptest.WaitStatus(t, wait, "a", gossip.StatusAlive, a, b)
	for _, step := range []func(context.Context, string) (gossip.KeyringReport, error){a.InstallKey, a.UseKey} {
		if _, err := step(opCtx(t), newKey); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.RemoveKey(opCtx(t), keyString(oldKey)); err != nil {
		t.Fatal(err)
	}
	if err := b.Leave(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := b.Shutdown(); err != nil {
		t.Fatal(err)
	}

	b = gossiptest.Start(t, bCfg) // EncryptKey is still the old key
	if got := b.LocalKeys(); !slices.Equal(got, []string{newKey}) {
		t.Fatalf("restarted b holds %v, want the rotated keyring (the new key only)", got)
	}
	gossiptest.Join(t, b, a)
	gossiptest.WaitStatus(t, wait, "b", gossip.StatusAlive, a, b)
}
