package kafkatest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// DevProcess is an `oncely dev kafka` child process started by Process.
type DevProcess struct {
	// Addrs are its brokers' host:port addresses.
	Addrs []string
	// PID is its process ID, for benchmarks that account its CPU apart.
	PID int
}

// Process starts `oncely dev kafka` (an in-memory kfake cluster, topics
// created on first use with 6 partitions) as a child process on a free
// 127.0.0.1 port and returns its broker addresses and process ID. Unlike an
// in-process kfake it shares neither the test's CPU accounting nor its
// garbage collector, which is what
// benchmarks comparing a client loop against oncely need. The binary is
// built from this module into a temporary directory; the process is killed
// at the end of t.
func Process(t testing.TB) DevProcess {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("kafkatest: go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(t.TempDir(), "oncely")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/oncely")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("kafkatest: building oncely: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "dev", "kafka", "--ports", "0", "--partitions", "6")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("kafkatest: starting oncely dev kafka: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	const prefix = "BROKER_URL=kafka://"
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), prefix); ok {
				lines <- strings.Fields(rest)[0]
				break
			}
		}
		close(lines)
		for sc.Scan() { // keep the pipe drained
		}
	}()
	select {
	case addrs, ok := <-lines:
		if !ok {
			t.Fatal("kafkatest: oncely dev kafka exited before listening")
		}
		return DevProcess{Addrs: strings.Split(addrs, ","), PID: cmd.Process.Pid}
	case <-time.After(30 * time.Second):
		t.Fatal("kafkatest: oncely dev kafka not listening within 30 s")
		return DevProcess{}
	}
}
