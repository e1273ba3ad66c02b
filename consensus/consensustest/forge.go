package consensustest

import (
	"fmt"
	"net"
	"time"

	"github.com/cairndns/cairn/rpc"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// ForgeHeartbeat plays an attacker on the network at address from (an IP,
// on loopback one that no agent of the test uses, such as 127.0.0.66):
// it connects to the server port at addr as Raft would (RaftByte first)
// and sends one
// AppendEntries heartbeat of a leader that does not exist, "rogue" at a
// made-up address, in term. It returns the server's answer, or the error
// a refused connection gives.
func ForgeHeartbeat(from, addr string, term uint64) (*raft.AppendEntriesResponse, error) {
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  &forgeLayer{from: net.ParseIP(from), closed: make(chan struct{})},
		MaxPool: 1,
		Timeout: 3 * time.Second,
		Logger:  hclog.NewNullLogger(),
	})
	defer trans.Close()
	req := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("rogue"), Addr: []byte("192.0.2.66:8300")},
		Term:      term,
	}
	var resp raft.AppendEntriesResponse
	if err := trans.AppendEntries("target", raft.ServerAddress(addr), req, &resp); err != nil {
		return nil, fmt.Errorf("forged heartbeat to %s: %w", addr, err)
	}
	return &resp, nil
}

// forgeLayer dials the server port as Raft's stream layer does and
// accepts nothing.
type forgeLayer struct {
	from   net.IP
	closed chan struct{}
}

func (l *forgeLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout, LocalAddr: &net.TCPAddr{IP: l.from}}
	conn, err := d.Dial("tcp", string(address))
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write([]byte{rpc.RaftByte}); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// Accept waits for Close: the attacker serves nothing.
func (l *forgeLayer) Accept() (net.Conn, error) {
	<-l.closed
	return nil, net.ErrClosed
}

func (l *forgeLayer) Close() error {
	select {
	case <-l.closed:
	default:
		close(l.closed)
	}
	return nil
}

func (l *forgeLayer) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 66), Port: 8300} }
