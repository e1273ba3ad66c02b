package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/coordinate"
)

// This file gives each pool member a Vivaldi network coordinate, as serf
// does for Consul: every ack to a probe carries the acking member's
// coordinate, and the prober feeds the probe's round trip time and that
// coordinate into its own coordinate client, which moves this member's
// coordinate a little towards where the sample says it is. After a few
// probe rounds the distance between two members' coordinates estimates
// the round trip time between them.
//
// serf/coordinate has its one home here; other packages see the plain
// Coordinate below.

// Coordinate is a member's network coordinate: serf's, copied out so that
// nothing outside this package depends on serf. Values are in seconds,
// except the dimensionless Error.
type Coordinate struct {
	Vec        []float64
	Error      float64
	Adjustment float64
	Height     float64
}

func fromSerf(c *coordinate.Coordinate) Coordinate {
	return Coordinate{Vec: append([]float64(nil), c.Vec...), Error: c.Error, Adjustment: c.Adjustment, Height: c.Height}
}

// coordVersion is the first byte of an encoded coordinate; a layout
// change takes the next value, and receivers ignore versions they do
// not know.
const coordVersion = 1

// encodeCoordinate packs c compactly for an ack: version, dimensions,
// then each float64 (Vec, Error, Adjustment, Height) as 8 little-endian
// bytes: 90 bytes for 8 dimensions, well within a UDP ack.
func encodeCoordinate(c *coordinate.Coordinate) []byte {
	b := make([]byte, 0, 2+8*(len(c.Vec)+3))
	b = append(b, coordVersion, byte(len(c.Vec)))
	for _, v := range c.Vec {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	for _, v := range [...]float64{c.Error, c.Adjustment, c.Height} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

var errBadCoordinate = errors.New("bad coordinate")

// decodeCoordinate reverses encodeCoordinate. Anything else (another
// version, a short or long payload, a NaN or infinity) is an error: the
// payload comes from the network.
func decodeCoordinate(b []byte) (*coordinate.Coordinate, error) {
	if len(b) < 2 || b[0] != coordVersion {
		return nil, fmt.Errorf("%w: unknown encoding", errBadCoordinate)
	}
	dims := int(b[1])
	if len(b) != 2+8*(dims+3) {
		return nil, fmt.Errorf("%w: %d bytes for %d dimensions", errBadCoordinate, len(b), dims)
	}
	next := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b[2+8*i:])) }
	c := &coordinate.Coordinate{Vec: make([]float64, dims)}
	for i := range c.Vec {
		c.Vec[i] = next(i)
	}
	c.Error, c.Adjustment, c.Height = next(dims), next(dims+1), next(dims+2)
	if !c.IsValid() {
		return nil, fmt.Errorf("%w: NaN or infinite component", errBadCoordinate)
	}
	return c, nil
}

// coordinates is a pool's coordinate state: the Vivaldi client that
// holds this member's coordinate, and the latest coordinate each peer
// sent in an ack.
type coordinates struct {
	client *coordinate.Client
	mu     sync.Mutex
	peers  map[string]*coordinate.Coordinate // by member name
}

func newCoordinates() (*coordinates, error) {
	client, err := coordinate.NewClient(coordinate.DefaultConfig())
	if err != nil {
		return nil, fmt.Errorf("gossip: coordinate client: %w", err)
	}
	return &coordinates{client: client, peers: make(map[string]*coordinate.Coordinate)}, nil
}

// forget drops what is known of a member that went away, so a member that
// comes back (maybe elsewhere) starts from fresh samples.
func (c *coordinates) forget(name string) {
	c.client.ForgetNode(name)
	c.mu.Lock()
	delete(c.peers, name)
	c.mu.Unlock()
}

// pingDelegate is the pool's memberlist.PingDelegate. memberlist calls
// AckPayload from its packet handler when answering a ping, and
// NotifyPingComplete from its probe goroutine when a direct probe's ack
// arrives: both only encode, decode and update under short locks.
type pingDelegate struct {
	p *Pool
}

var _ memberlist.PingDelegate = pingDelegate{}

func (d pingDelegate) AckPayload() []byte {
	return encodeCoordinate(d.p.coords.client.GetCoordinate())
}

func (d pingDelegate) NotifyPingComplete(other *memberlist.Node, rtt time.Duration, payload []byte) {
	if len(payload) == 0 {
		return // a peer with coordinates disabled
	}
	c, err := decodeCoordinate(payload)
	if err != nil {
		d.p.logger.Debug("ignoring a probe ack's coordinate", "peer", other.Name, "err", err)
		return
	}
	// Update refuses a coordinate of other dimensions and a round trip out
	// of its range (negative, or above 10s); the sample is then lost,
	// which costs nothing but a little precision.
	if _, err := d.p.coords.client.Update(other.Name, c, rtt); err != nil {
		d.p.logger.Debug("coordinate sample rejected", "peer", other.Name, "rtt", rtt, "err", err)
		return
	}
	d.p.coords.mu.Lock()
	d.p.coords.peers[other.Name] = c
	d.p.coords.mu.Unlock()
}

// Coordinate returns this member's network coordinate; ok is false when
// the pool computes none (Config.DisableCoordinates). A new member's
// coordinate is the origin with Error 1.5; it moves with every probe.
func (p *Pool) Coordinate() (c Coordinate, ok bool) {
	if p.coords == nil {
		return Coordinate{}, false
	}
	return fromSerf(p.coords.client.GetCoordinate()), true
}

// PeerCoordinates returns the latest coordinate each other member sent
// in an ack to this member's probes, by member name: members not probed
// yet, and those that failed or left, are missing.
func (p *Pool) PeerCoordinates() map[string]Coordinate {
	if p.coords == nil {
		return nil
	}
	p.coords.mu.Lock()
	defer p.coords.mu.Unlock()
	out := make(map[string]Coordinate, len(p.coords.peers))
	for name, c := range p.coords.peers {
		out[name] = fromSerf(c)
	}
	return out
}
