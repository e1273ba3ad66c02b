package sdnotify_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/internal/sdnotify"
)

// listen opens a unixgram socket as systemd does for NOTIFY_SOCKET.
func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen %s: %v", name, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// receive reads one datagram within a generous deadline.
func receive(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("read notification: %v", err)
	}
	return string(buf[:n])
}

// TestSendPathAndAbstract: each state arrives as one datagram on a socket
// named by a path and on an abstract one ("@name"), the two forms
// systemd puts in NOTIFY_SOCKET.
func TestSendPathAndAbstract(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		filepath.Join(t.TempDir(), "notify.sock"),
		fmt.Sprintf("@cairn-sdnotify-test-%d", os.Getpid()),
	} {
		conn := listen(t, name)
		n := sdnotify.New(name, slog.New(slog.DiscardHandler))
		for _, state := range []string{sdnotify.Ready, sdnotify.Reloading, sdnotify.Stopping} {
			if err := n.Send(state); err != nil {
				t.Fatalf("%s: send %s: %v", name, state, err)
			}
			if got := receive(t, conn); got != state {
				t.Errorf("%s: got %q, want %q", name, got, state)
			}
		}
	}
}

// TestNoSocketIsNoop: without NOTIFY_SOCKET there is no Notifier, and
// using it anyway sends nothing and fails nothing.
func TestNoSocketIsNoop(t *testing.T) {
	t.Parallel()
	n := sdnotify.New("", slog.New(slog.DiscardHandler))
	if n != nil {
		t.Fatalf("got a Notifier for an empty socket name, want nil")
	}
	n.Notify(sdnotify.Ready)
	if err := n.Send(sdnotify.Ready); err != nil {
		t.Errorf("nil Notifier: got %v, want nil", err)
	}
}

// TestNotifyLogsFailure: a socket that is gone is logged, not fatal.
func TestNotifyLogsFailure(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	gone := filepath.Join(t.TempDir(), "gone.sock")
	sdnotify.New(gone, slog.New(slog.NewTextHandler(&logs, nil))).Notify(sdnotify.Ready)
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), gone) {
		t.Errorf("got log %q, want a warning naming %s", logs.String(), gone)
	}
}
