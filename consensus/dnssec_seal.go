package consensus

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/cairndns/cairn/rpc"
)

// The DNSSEC private key at rest. Raft's log and snapshots, and archives
// saved from them, hold the key sealed (AES-256-GCM) with a key derived
// from a secret every server holds outside Raft: the primary gossip
// encryption key, when gossip is encrypted. A snapshot that leaves the
// servers then does not carry a usable key. The leader seals again when
// the primary gossip key changes, so the key stays readable after the old
// gossip key is removed from the keyring (within a reconcile interval of
// the change: remove an old gossip key no sooner than that).

// sealInfo binds the derived key to this one use.
const sealInfo = "cairn: DNSSEC key at rest"

// sealKey is a sealing key and its name, as stored beside the sealed key.
type sealKey struct {
	id  string
	aes cipher.AEAD
}

// sealKeys derives the sealing keys from s.cfg.SealKeys, primary first;
// none when it is unset or returns none.
func (s *Server) sealKeys() ([]sealKey, error) {
	if s.cfg.SealKeys == nil {
		return nil, nil
	}
	var out []sealKey
	for _, secret := range s.cfg.SealKeys() {
		k, err := hkdf.Key(sha256.New, secret, nil, sealInfo, 32)
		if err != nil {
			return nil, fmt.Errorf("derive the DNSSEC sealing key: %w", err)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("DNSSEC sealing key: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("DNSSEC sealing key: %w", err)
		}
		sum := sha256.Sum256(k) // names the key without giving it away
		out = append(out, sealKey{id: hex.EncodeToString(sum[:8]), aes: aead})
	}
	return out, nil
}

// seal returns k with its private key sealed with the primary sealing
// key, or k as it is when there is none.
func (s *Server) seal(k rpc.DNSSECKey) (rpc.DNSSECKey, error) {
	keys, err := s.sealKeys()
	if err != nil || len(keys) == 0 {
		return k, err
	}
	nonce := make([]byte, keys[0].aes.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return k, fmt.Errorf("seal the DNSSEC key: %w", err)
	}
	k.PrivateKey = keys[0].aes.Seal(nonce, nonce, k.PrivateKey, []byte(sealInfo))
	k.SealedWith = keys[0].id
	return k, nil
}

// errUnsealable is unseal's error for a key sealed with a secret this
// server does not hold.
var errUnsealable = errors.New("the DNSSEC key is sealed with a gossip key this server does not hold")

// unseal returns k with its private key in the clear.
func (s *Server) unseal(k rpc.DNSSECKey) (rpc.DNSSECKey, error) {
	if k.SealedWith == "" {
		return k, nil
	}
	keys, err := s.sealKeys()
	if err != nil {
		return k, err
	}
	for _, sk := range keys {
		if sk.id != k.SealedWith {
			continue
		}
		n := sk.aes.NonceSize()
		if len(k.PrivateKey) < n {
			return k, errors.New("the sealed DNSSEC key is cut short")
		}
		der, err := sk.aes.Open(nil, k.PrivateKey[:n], k.PrivateKey[n:], []byte(sealInfo))
		if err != nil {
			return k, fmt.Errorf("unseal the DNSSEC key: %w", err)
		}
		k.PrivateKey, k.SealedWith = der, ""
		return k, nil
	}
	return k, errUnsealable
}

// needsSealing reports whether k, as stored, is sealed otherwise than
// with the current primary sealing key (or not at all while there is
// one, or still while there is none).
func (s *Server) needsSealing(k *rpc.DNSSECKey) (bool, error) {
	keys, err := s.sealKeys()
	if err != nil {
		return false, err
	}
	want := ""
	if len(keys) > 0 {
		want = keys[0].id
	}
	return k.SealedWith != want, nil
}

// sameKey reports whether the stored key cur holds the private key der.
func (s *Server) sameKey(cur *rpc.DNSSECKey, der []byte) bool {
	clear, err := s.unseal(*cur)
	return err == nil && bytes.Equal(clear.PrivateKey, der)
}
