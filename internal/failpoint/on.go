//go:build faults

package failpoint

import (
	"os"
	"syscall"
)

// Hit kills the process with SIGKILL when $ONCELY_FAILPOINT is name: no
// deferred function, no flush, as a crash.
func Hit(name string) {
	if os.Getenv(Env) == name {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
