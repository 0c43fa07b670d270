package vet_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/oncely/oncely/vet"
)

// Floors of the corpus measure (docs/teams.md): how many of the corpus's
// bugs the analyzers catch, of how many. A change that catches fewer fails;
// one that catches more raises the floor. No report on a line without a
// // want comment is tolerated: precision stays 100 %.
const (
	corpusBugs   = 92
	corpusCaught = 92
)

type line struct {
	file string
	line int
}

// TestCorpus runs every analyzer over testdata/src/corpus: handler packages
// written the way teams write them (repositories, generated query code, a
// platform middleware package, a generic wrapper), half of them with one
// bug each, marked // want. It measures recall (bugs reported) and
// precision (reports that are bugs), and holds them to the floors above.
func TestCorpus(t *testing.T) {
	pkgs, graph := analyzedTestdata(t)
	want := map[line]string{} // the bug lines, by package
	got := map[line][]string{}
	for _, pkg := range pkgs {
		if !strings.HasPrefix(pkg.PkgPath, "corpus/") {
			continue
		}
		for _, f := range pkg.Syntax {
			for _, cg := range f.Comments {
				for _, c := range cg.List {
					if strings.HasPrefix(c.Text, "// want ") {
						p := pkg.Fset.Position(c.Slash)
						want[line{p.Filename, p.Line}] = pkg.Name
					}
				}
			}
		}
	}
	for _, act := range graph.Roots {
		if !strings.HasPrefix(act.Package.PkgPath, "corpus/") {
			continue
		}
		if act.Err != nil {
			t.Fatalf("%s on %s: %v", act.Analyzer.Name, act.Package.PkgPath, act.Err)
		}
		for _, d := range act.Diagnostics {
			p := act.Package.Fset.Position(d.Pos)
			got[line{p.Filename, p.Line}] = append(got[line{p.Filename, p.Line}], act.Analyzer.Name+": "+d.Message)
		}
	}
	caught, falsePos := 0, 0
	groupBugs, groupCaught := map[string]int{}, map[string]int{}
	var rows []string
	for l, pkg := range want {
		groupBugs[group(pkg)]++
		if len(got[l]) > 0 {
			caught++
			groupCaught[group(pkg)]++
			rows = append(rows, fmt.Sprintf("caught  %-16s %s", pkg, short(got[l][0])))
		} else {
			rows = append(rows, fmt.Sprintf("MISSED  %-16s line %d", pkg, l.line))
		}
	}
	for l, msgs := range got {
		if _, ok := want[l]; !ok {
			falsePos += len(msgs)
			t.Errorf("false positive at %s:%d: %s", l.file, l.line, msgs[0])
		}
	}
	sort.Strings(rows)
	for _, r := range rows {
		t.Log(r)
	}
	for _, g := range []string{"tuned", "hold", "fresh", "next", "last", "late", "gap"} {
		t.Logf("corpus, %s packages: %d of %d bugs caught", g, groupCaught[g], groupBugs[g])
	}
	t.Logf("corpus: %d bugs, %d caught (recall %.0f %%), %d false positives", len(want), caught, 100*float64(caught)/float64(len(want)), falsePos)
	if len(want) != corpusBugs {
		t.Errorf("corpus has %d marked bugs, the floor counts %d: update corpusBugs", len(want), corpusBugs)
	}
	if caught < corpusCaught {
		t.Errorf("caught %d of the corpus's %d bugs, fewer than the floor %d", caught, len(want), corpusCaught)
	}
	if caught > corpusCaught {
		t.Errorf("caught %d of the corpus's %d bugs, more than the floor %d: raise corpusCaught (and docs/teams.md)", caught, len(want), corpusCaught)
	}
}

var testdataOnce struct {
	sync.Once
	pkgs  []*packages.Package
	graph *checker.Graph
	err   error
}

// analyzedTestdata loads the corpus and every held-out round once, and runs
// every analyzer over them once: they share the stubs and the standard
// library, whose loading and analysis dominate each. TestCorpus and
// TestHeldOut each measure their own packages of the result.
func analyzedTestdata(t *testing.T) ([]*packages.Package, *checker.Graph) {
	t.Helper()
	testdataOnce.Do(func() {
		patterns := []string{"corpus/..."}
		for _, r := range heldOutRounds {
			patterns = append(patterns, r.pattern)
		}
		testdataOnce.pkgs = loadTestdata(t, patterns...)
		testdataOnce.graph, testdataOnce.err = checker.Analyze(vet.Analyzers(), testdataOnce.pkgs, nil)
	})
	if testdataOnce.pkgs == nil || testdataOnce.err != nil {
		t.Fatalf("analysing testdata: %v", testdataOnce.err)
	}
	return testdataOnce.pkgs, testdataOnce.graph
}

// loadTestdata loads the packages of testdata/src matching patterns, with
// syntax and types, failing the test on any error.
func loadTestdata(t *testing.T, patterns ...string) []*packages.Package {
	t.Helper()
	dir := analysistest.TestData()
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.LoadAllSyntax,
		Dir:  filepath.Join(dir, "src"),
		Env:  append(os.Environ(), "GOPATH="+dir, "GO111MODULE=off", "GOPROXY=off", "GOFLAGS="),
	}, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	if n := packages.PrintErrors(pkgs); n > 0 {
		t.Fatalf("%d errors loading %s", n, strings.Join(patterns, " "))
	}
	return pkgs
}

// group names the corpus round a package belongs to: "hold", "fresh",
// "next", "last" and "late" are the held-out rounds, each written apart from the analyzers
// before the changes that followed it; "tuned" are the packages the
// analyzers were extended against, and "gap" the packages written for the
// kinds of bug the held-out corpus (testdata/src/heldout) showed missed.
func group(pkg string) string {
	for _, g := range []string{"hold", "fresh", "next", "last", "late", "gap"} {
		if strings.HasPrefix(pkg, g) {
			return g
		}
	}
	return "tuned"
}

func short(msg string) string {
	if i := strings.IndexAny(msg, ":("); i > 0 {
		return msg[:i]
	}
	return msg
}
