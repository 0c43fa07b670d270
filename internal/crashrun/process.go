package crashrun

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// program starts processes of one binary: the ledger, or with
// Config.EndToEnd also `oncely relay`.
type program struct {
	// name prefixes the processes' log files and names: "ledger", "relay".
	name string
	bin  string
	env  []string
	args []string
	// ready is a line the program logs once its signal handler is
	// installed; stop waits for it before sending SIGTERM.
	ready  []byte
	logDir string
}

type process struct {
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{}
	err     error
	name    string
	log     string
	ready   []byte
}

// start starts a process of the program, logging to <name>-name.log, with
// env added to the program's environment.
func (l *program) start(name string, env ...string) (*process, error) {
	logPath := filepath.Join(l.logDir, l.name+"-"+name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(l.bin, l.args...)
	cmd.Env = append(append(os.Environ(), l.env...), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("crashtest: starting the %s: %w", l.name, err)
	}
	p := &process{cmd: cmd, started: time.Now(), exited: make(chan struct{}), name: l.name + "-" + name, log: logPath, ready: l.ready}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop waits until the process logged its start (p.ready: a SIGTERM before
// it installed its signal handler would kill it, which is not what is tested),
// sends SIGTERM and reports whether the process exited 0 within timeout (it
// is killed otherwise).
func (p *process) stop(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !bytes.Contains(p.tail(1<<20), p.ready) && time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err == nil
	case <-time.After(timeout):
		p.kill()
		return false
	}
}

// exitedEarly returns an error when the process is gone.
func (p *process) exitedEarly() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited by itself: %v; end of its log:\n%s", p.name, p.err, p.tail(2000))
	default:
		return nil
	}
}

// tail returns the last n bytes of the process's log.
func (p *process) tail(n int) []byte {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return bytes.TrimSpace(b)
}

// stopped stops p with SIGTERM and records an unclean exit.
func (r *Result) stopped(p *process) {
	if !p.stop(StopTimeoutDefault) {
		r.unclean(p)
	}
}

// unclean records p's unclean exit.
func (r *Result) unclean(p *process) {
	r.BadExits++
	r.BadExitLogs = append(r.BadExitLogs, fmt.Sprintf("%s: %v: %s", p.name, p.err, p.tail(3000)))
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
