// Package archtest holds a test over the whole module: no log/slog call
// in oncely's code passes a time.Duration, which slog's JSON handler prints
// as bare nanoseconds. Log d.String() instead. (The tests' loggers also pass
// every line through envtest.LogCheck, which sees attributes built at run
// time.)
package archtest
