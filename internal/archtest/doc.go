// Package archtest holds the tests over the whole module; it has no code of
// its own:
//
//   - TestImportRules keeps the layout's import rules: no production package
//     imports a test kit (a package whose name ends in "test"), consumer
//     stands on retry alone, store imports no adapter, adapters import no
//     store, and so on (the table in imports_test.go, shown in README.md and
//     docs/runtime.md).
//   - TestNoDurationInLogs: no log/slog call in oncely's code passes a
//     time.Duration, which slog's JSON handler prints as bare nanoseconds.
//     Log d.String() instead. (The tests' loggers also pass every line
//     through envtest.LogCheck, which sees attributes built at run time.)
package archtest
