package envtest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// ChromiumDefault is the executable the browser tests look up on PATH when
// CHROMIUM_PATH is unset: Debian's chromium package, which scripts/test.sh
// installs when it is missing.
const ChromiumDefault = "chromium"

// Chromium returns the path of the Chromium executable the browser tests
// drive: CHROMIUM_PATH (an absolute path, or a name looked up on PATH), else
// ChromiumDefault on PATH. A browser that is not there counts as a missing
// service: under CI=true the test fails, elsewhere it skips.
func Chromium(t testing.TB) string {
	t.Helper()
	name, env := os.Getenv("CHROMIUM_PATH"), "CHROMIUM_PATH="
	if name == "" {
		name, env = ChromiumDefault, "on PATH: "
	}
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "Chromium", fmt.Errorf("%s%w", env, err))
		return ""
	}
	return path
}
