package kafkatest

import (
	"net"
	"sync"
	"testing"
)

// DeadAddrs returns broker addresses at which no Kafka answers, by the way
// each fails: "silent" accepts TCP connections and never reads or answers
// (closed at the end of t), "unresolvable" names a host that does not
// resolve, "closed" a local port nothing listens on.
func DeadAddrs(t testing.TB) map[string]string {
	t.Helper()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = silent.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	return map[string]string{
		"silent":       silent.Addr().String(),
		"unresolvable": "nonexistent.invalid:9092",
		"closed":       closedAddr,
	}
}
