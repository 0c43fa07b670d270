package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/oncely/oncely/vet"
)

// runVet runs the analyzers of package vet on the packages named by the
// command line (./... by default) and prints each report once, sorted.
func runVet(ctx context.Context, a *app, args []string) error {
	fs := a.flags("vet", "oncely vet [--tests=false] [--tags T] [packages]", `
Checks Go packages for code that breaks effectively-once processing:
  txescape  a statement sent outside the claim's transaction from a
            transactional handler (the pool, a *pgx.Conn, *sql.DB, ...)
  nodedupe  consumer.New without an idempotency middleware and without
            Config.Duplicates = consumer.AllowDuplicates("reason");
            consumer.Deduplicating in a package that never claims
  escape    a goroutine that captures the handler's transaction or context,
            or the transaction or context stored where it outlives the handler
  settle    user code acking deliveries itself, or broker auto-commit/auto-ack
Packages are patterns as for go build (default ./...). A report is silenced
by a comment on its line or the line above: //oncely:allow NAME reason.
The exit code is 1 when anything is reported. The same analyzers run as
go vet -vettool=$(which oncelyvet) ./...`)
	tests := fs.Bool("tests", true, "also check the packages' test files")
	tags := fs.String("tags", "", "comma-separated build tags, as for go build (e.g. faults)")
	if err := fs.Parse(args); err != nil {
		return usagef("vet: %v (run oncely vet --help)", err)
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	cfg := &packages.Config{Context: ctx, Mode: packages.LoadSyntax, Tests: *tests}
	if *tags != "" {
		cfg.BuildFlags = []string{"-tags=" + *tags}
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return fmt.Errorf("vet: loading packages: %w", err)
	}
	var loadErrs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			loadErrs = append(loadErrs, e.Error())
		}
	})
	if len(loadErrs) > 0 {
		slices.Sort(loadErrs)
		return fmt.Errorf("vet: the packages do not load:\n%s", strings.Join(slices.Compact(loadErrs), "\n"))
	}
	graph, err := checker.Analyze(vet.Analyzers(), pkgs, nil)
	if err != nil {
		return fmt.Errorf("vet: %w", err)
	}
	wd, _ := os.Getwd()
	var lines []string
	for act := range graph.All() {
		if !act.IsRoot {
			continue
		}
		if act.Err != nil {
			return fmt.Errorf("vet: %s: %w", act, act.Err)
		}
		for _, d := range act.Diagnostics {
			pos := act.Package.Fset.Position(d.Pos)
			if rel, err := filepath.Rel(wd, pos.Filename); err == nil && !strings.HasPrefix(rel, "..") {
				pos.Filename = rel
			}
			lines = append(lines, fmt.Sprintf("%s: %s: %s", pos, act.Analyzer.Name, d.Message))
		}
	}
	// A package with tests is analysed twice (alone and with its test
	// files): report each finding once.
	slices.Sort(lines)
	lines = slices.Compact(lines)
	for _, l := range lines {
		fmt.Fprintln(a.stdout, l)
	}
	if len(lines) > 0 {
		return fmt.Errorf("vet: %d report(s); fix them or, where the code is right, silence one with //oncely:allow NAME reason", len(lines))
	}
	return nil
}
