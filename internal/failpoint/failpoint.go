// Package failpoint stops the process at named points of a multi-step
// operation, for crash tests. In a normal build Hit does nothing and costs
// nothing; built with the faults tag, Hit(name) kills the process with
// SIGKILL when the environment variable Env names the point.
package failpoint

// Env is the variable naming the point where a faults build kills itself.
const Env = "ONCELY_FAILPOINT"
