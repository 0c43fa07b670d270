package crashrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Binaries are the programs a crash test runs.
type Binaries struct {
	// Ledger is the examples/ledger binary.
	Ledger string
	// Oncely is the cmd/oncely binary (for `oncely dev kafka`).
	Oncely string
}

// Build compiles examples/ledger and cmd/oncely of the module that contains
// the working directory into dir, with one go build.
func Build(ctx context.Context, dir string) (Binaries, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return Binaries{}, fmt.Errorf("crashtest: finding the oncely module (run inside its source tree): %w", err)
	}
	root := strings.TrimSpace(string(out))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "./examples/ledger", "./cmd/oncely")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return Binaries{}, fmt.Errorf("crashtest: go build: %w\n%s", err, msg)
	}
	return Binaries{Ledger: filepath.Join(dir, "ledger"), Oncely: filepath.Join(dir, "oncely")}, nil
}

// Kafka is a dev Kafka cluster running as a child process.
type Kafka struct {
	// URL is the broker URL, kafka://127.0.0.1:PORT.
	URL  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartKafka runs `oncely dev kafka` (the binary oncely) on a free port as
// a separate process, so it survives the ledger's kills, and waits until it
// accepts connections. Stop it with Stop.
func StartKafka(ctx context.Context, oncely, logPath string) (*Kafka, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(oncely, "dev", "kafka", "--ports", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("crashtest: starting oncely dev kafka: %w", err)
	}
	k := &Kafka{URL: "kafka://" + addr, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(k.done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return k, nil
		}
		select {
		case <-k.done:
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("crashtest: oncely dev kafka exited at start:\n%s", log)
		case <-ctx.Done():
			k.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			k.Stop()
			return nil, errors.New("crashtest: oncely dev kafka did not listen within 30s")
		}
	}
}

// Stop ends the dev cluster (SIGTERM, then SIGKILL after 5s).
func (k *Kafka) Stop() {
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(5 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.done
	}
}
