package consensus

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// commandType is the first byte of every log entry cairn writes; the rest is
// the msgpack-encoded request. New types are appended, never renumbered.
type commandType byte

const (
	cmdRegister   commandType = 0
	cmdDeregister commandType = 1
	// cmdQuery creates, updates or deletes a prepared query
	// (catalog.QueryRequest).
	cmdQuery commandType = 2
	// cmdACL changes ACL policies and tokens (catalog.ACLRequest).
	cmdACL commandType = 3
	// cmdAutopilot sets autopilot's configuration (autopilotRequest,
	// autopilot_fsm.go).
	cmdAutopilot commandType = 4
	// cmdOnce wraps another command, applied at most once per request ID
	// (onceCommand, once.go).
	cmdOnce commandType = 5
	// cmdKV writes to the key/value store (catalog.KVRequest); the FSM
	// answers whether it was done (false: a CAS that did not match).
	cmdKV commandType = 6
	// cmdSession creates or destroys a session (catalog.SessionRequest).
	cmdSession commandType = 7
	// cmdTxn applies a transaction of key/value operations, all or none
	// (catalog.TxnRequest); the FSM answers its *catalog.TxnResponse
	// (Errors set: nothing was applied).
	cmdTxn commandType = 8
	// cmdDNSSEC sets the datacenter's DNSSEC key (dnssecRequest,
	// dnssec.go). 9 is the coordinates' batch.
	cmdDNSSEC commandType = 10
	// cmdCoordinates writes a batch of nodes' network coordinates
	// (catalog.CoordinateBatch, coordinate_endpoint.go).
	cmdCoordinates commandType = 9
	// cmdBatch carries several batchable commands applied at one index
	// (batchCommand, batch.go); servers before it cannot read it.
	cmdBatch commandType = 11
)

var msgpackHandle = &codec.MsgpackHandle{}

func encodeCommand(t commandType, req any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(byte(t))
	if err := codec.NewEncoder(&buf, msgpackHandle).Encode(req); err != nil {
		return nil, fmt.Errorf("encode command %d: %w", t, err)
	}
	return buf.Bytes(), nil
}

func decode(data []byte, v any) error {
	return codec.NewDecoderBytes(data, msgpackHandle).Decode(v)
}

// fsm applies committed log entries to the catalog. Raft calls Apply,
// Snapshot, Restore and StoreConfiguration from its FSM goroutine, one at a
// time.
type fsm struct {
	store *catalog.Store
	// conf is the latest committed configuration this FSM was given, with
	// its index; nil before the first. It is read from other goroutines
	// (Server.RaftConfiguration).
	conf atomic.Pointer[indexedConfiguration]
	// autopilot is autopilot's configuration as the log set it, nil
	// until it is first set; read from other goroutines, replaced, never
	// changed in place (autopilot_fsm.go).
	autopilot atomic.Pointer[rpc.AutopilotConfig]
	// dnssec is the DNSSEC key as the log set it, nil when none was
	// (dnssec.go).
	dnssec atomic.Pointer[rpc.DNSSECKey]
	// once is the request IDs applied lately (once.go); FSM goroutine
	// only.
	once onceLog
}

// indexedConfiguration is a Raft configuration with the index of the log
// entry that made it.
type indexedConfiguration struct {
	index   uint64
	servers []raft.Server
}

var (
	_ raft.FSM                = (*fsm)(nil)
	_ raft.ConfigurationStore = (*fsm)(nil)
)

// StoreConfiguration records a configuration entry once it is committed. It
// is here only to learn the entry's index: raft's GetConfiguration answers
// from a copy of the configuration that lacks it (its Index() is always 0
// in raft v1.8). Entries come in log order, so the last one is the newest.
func (f *fsm) StoreConfiguration(index uint64, c raft.Configuration) {
	f.conf.Store(&indexedConfiguration{index: index, servers: c.Clone().Servers})
}

// Apply returns nil or an error; the error reaches the writer through
// Server.apply.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand || len(l.Data) == 0 {
		return nil
	}
	switch commandType(l.Data[0]) {
	case cmdOnce:
		return f.applyOnce(l)
	case cmdBatch:
		return f.applyBatch(l)
	}
	return f.applyCommand(l.Index, l.AppendedAt, l.Data)
}

// applyCommand applies the encoded command data (encodeCommand) at the
// log index. at is the leader's time stamp on the entry: lock-delays run
// from it, so that every server decides the same locks.
func (f *fsm) applyCommand(index uint64, at time.Time, data []byte) any {
	if len(data) == 0 {
		return fmt.Errorf("log index %d: empty command: %w", index, ErrUnknownCommand)
	}
	t := commandType(data[0])
	if batchable(t) {
		w, err := decodeWrite(index, data)
		if err != nil {
			return err
		}
		return writeResponse(f.store.ApplyBatch(index, at, []catalog.Write{w})[0])
	}
	switch t {
	case cmdQuery:
		var req catalog.QueryRequest
		if err := decode(data[1:], &req); err != nil {
			return fmt.Errorf("decode prepared query at index %d: %w", index, err)
		}
		return f.store.ApplyQuery(index, &req)
	case cmdACL:
		var req catalog.ACLRequest
		if err := decode(data[1:], &req); err != nil {
			return fmt.Errorf("decode ACL change at index %d: %w", index, err)
		}
		return f.store.ApplyACL(index, &req)
	case cmdAutopilot:
		var req autopilotRequest
		if err := decode(data[1:], &req); err != nil {
			return fmt.Errorf("decode autopilot configuration at index %d: %w", index, err)
		}
		return f.applyAutopilot(index, &req)
	case cmdDNSSEC:
		var req dnssecRequest
		if err := decode(data[1:], &req); err != nil {
			return fmt.Errorf("decode DNSSEC key at index %d: %w", index, err)
		}
		return f.applyDNSSEC(index, &req)
	case cmdCoordinates:
		var req catalog.CoordinateBatch
		if err := decode(data[1:], &req); err != nil {
			return fmt.Errorf("decode coordinate batch at index %d: %w", index, err)
		}
		return f.store.ApplyCoordinates(index, &req)
	}
	return fmt.Errorf("log index %d type %d: %w", index, data[0], ErrUnknownCommand)
}

// Snapshot takes a consistent dump of the catalog, and autopilot's
// configuration; writing it out happens later, off the FSM goroutine, in
// Persist.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	d, err := f.store.Dump()
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{state: fsmState{Dump: d, Autopilot: f.autopilot.Load(), DNSSEC: f.dnssec.Load(), Once: f.once.snapshot()}}, nil
}

// Restore replaces the catalog, and autopilot's configuration, with a
// snapshot's contents. A snapshot without the configuration (written
// before it existed, or a restored archive) leaves none, for the leader to
// store its own again.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	// Decoding from memory is about twice as fast as from a reader, even
	// a buffered one; the snapshot's bytes are small beside the catalog
	// built from them (42 MB for 100,000 instances with a check each,
	// against 183 MiB of live heap in BenchmarkFSMRestore), and the
	// catalog keeps no reference to them (the codec copies strings and
	// byte slices out), so they are garbage once decoded.
	data, err := readSnapshot(rc)
	if err != nil {
		return fmt.Errorf("read snapshot: %w", err)
	}
	st := fsmState{Dump: &catalog.Dump{}}
	if err := codec.NewDecoderBytes(data, msgpackHandle).Decode(&st); err != nil {
		return fmt.Errorf("decode snapshot: %w", err)
	}
	if err := f.store.Restore(st.Dump); err != nil {
		return err
	}
	f.autopilot.Store(st.Autopilot)
	f.dnssec.Store(st.DNSSEC)
	f.once.restore(st.Once)
	return nil
}

// maxSizeHint bounds the buffer allocated up front from a snapshot's
// recorded size, should that be wrong; a larger snapshot is read all the
// same, growing the buffer.
const maxSizeHint = 1 << 30

// sizedSnapshots is raft's snapshot store with readers that know the size of
// their snapshot (raft opens the snapshot it restores through the store:
// at start, on a follower sent one, on the leader restoring an archive).
type sizedSnapshots struct {
	raft.SnapshotStore
}

func (s sizedSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	return meta, sizedReader{ReadCloser: rc, size: meta.Size}, nil
}

// sizedReader is a snapshot's reader with its recorded size.
type sizedReader struct {
	io.ReadCloser
	size int64
}

// readSnapshot reads all of r. When r knows its size (sizedReader) the
// buffer is allocated once: io.ReadAll would grow it step by step,
// allocating about twice the snapshot (80 MB for one of 42 MB) and holding
// two large buffers at once while the old catalog is still live.
func readSnapshot(r io.Reader) ([]byte, error) {
	sr, ok := r.(sizedReader)
	if !ok || sr.size <= 0 {
		return io.ReadAll(r)
	}
	// One byte more than the size, so that the read that finds the end
	// does not grow the buffer.
	b := make([]byte, 0, min(sr.size, maxSizeHint)+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) { // larger than recorded
			b = append(b, 0)[:len(b)]
		}
	}
}

type fsmSnapshot struct {
	state fsmState
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := codec.NewEncoder(sink, msgpackHandle).Encode(s.state); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("write snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
