package vet_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"
	"golang.org/x/tools/go/packages"
)

// TestHeldOutLoads checks that the held-out corpus (testdata/src/heldout),
// written apart from the analyzers' own tests to measure their recall and
// precision, type-checks. It does not run the analyzers: the corpus's answers
// are in testdata/src/heldout/ANSWERS.md and the "// want" comments.
func TestHeldOutLoads(t *testing.T) {
	dir := analysistest.TestData()
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.LoadAllSyntax,
		Dir:  filepath.Join(dir, "src"),
		Env:  append(os.Environ(), "GOPATH="+dir, "GO111MODULE=off", "GOPROXY=off", "GOFLAGS="),
	}, "heldout/...")
	if err != nil {
		t.Fatal(err)
	}
	if n := packages.PrintErrors(pkgs); n > 0 {
		t.Fatalf("%d errors loading the held-out corpus", n)
	}
	if len(pkgs) < 32 {
		t.Fatalf("held-out corpus has %d packages, want at least 32", len(pkgs))
	}
}
