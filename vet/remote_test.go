package vet_test

import (
	"fmt"
	"go/token"
	"strings"
	"testing"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/oncely/oncely/vet"
)

// TestRemoteStatementNamed: a handler's call into a repository of another
// package that writes through the pool it holds (corpus/gapbugrepostmt,
// the write in an unexported helper of corpus/internal/meters) is reported
// once, on the handler's call, and the report names the repository's
// statement in its message and points at it as related information.
func TestRemoteStatementNamed(t *testing.T) {
	pkgs := loadTestdata(t, "corpus/gapbugrepostmt")
	var stmt token.Position
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, f := range p.Syntax {
			for _, cg := range f.Comments {
				for _, c := range cg.List {
					if c.Text == "// the statement gapbugrepostmt reaches" {
						stmt = p.Fset.Position(c.Slash)
					}
				}
			}
		}
	})
	if !stmt.IsValid() {
		t.Fatal("corpus/internal/meters has no marked statement")
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{vet.TxEscape}, pkgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var diags []analysis.Diagnostic
	for _, act := range graph.Roots {
		diags = append(diags, act.Diagnostics...)
	}
	if len(diags) != 1 {
		t.Fatalf("%d reports, want 1: %v", len(diags), diags)
	}
	d := diags[0]
	if want := fmt.Sprintf("[the statement at meters.go:%d]", stmt.Line); !strings.Contains(d.Message, want) {
		t.Errorf("the report does not name the statement %q: %s", want, d.Message)
	}
	var related []string
	for _, r := range d.Related {
		p := pkgs[0].Fset.Position(r.Pos)
		if p.Filename == stmt.Filename && p.Line == stmt.Line {
			return
		}
		related = append(related, p.String())
	}
	t.Errorf("no related information at %s:%d, got %v", stmt.Filename, stmt.Line, related)
}
