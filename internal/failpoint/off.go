//go:build !faults

package failpoint

// Hit does nothing outside a faults build.
func Hit(string) {}
