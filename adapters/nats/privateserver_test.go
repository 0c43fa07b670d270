//go:build faults

package nats

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/oncely/oncely/internal/envtest"
)

// privateServer is a nats-server of the test's own with JetStream, storing
// in a directory of the test, on a free port of 127.0.0.1: a test may kill
// and restart it without touching the shared server.
type privateServer struct {
	t    testing.TB
	bin  string
	port int
	dir  string
	cmd  *exec.Cmd
}

// startPrivateServer starts a private nats-server, stopped at the end of t.
// Without a nats-server binary it fails under CI and skips elsewhere.
func startPrivateServer(t testing.TB) *privateServer {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		envtest.Missing(t, "nats-server (apt-get install -y nats-server)", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &privateServer{t: t, bin: bin, port: port, dir: t.TempDir()}
	s.start()
	t.Cleanup(s.kill)
	return s
}

func (s *privateServer) url() string { return "nats://" + s.addr() }

func (s *privateServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// start runs the server on its port and directory and waits until it
// answers.
func (s *privateServer) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-sd", s.dir)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting nats-server: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := nats.Connect(s.url())
		if err == nil {
			nc.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the private nats-server on %s did not answer within 10s: %v", s.addr(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill stops the server as a crash would (SIGKILL).
func (s *privateServer) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// wipe removes what the server stored: the next start is empty.
func (s *privateServer) wipe() {
	s.t.Helper()
	if err := os.RemoveAll(s.dir); err != nil {
		s.t.Fatal(err)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		s.t.Fatal(err)
	}
}
