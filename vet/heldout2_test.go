package vet_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"
	"golang.org/x/tools/go/packages"
)

// TestHeldOut2Loads type-checks the second held-out corpus
// (testdata/src/heldout2, ANSWERS.md): at least 30 service packages, every
// one loading without an error.
func TestHeldOut2Loads(t *testing.T) {
	dir := analysistest.TestData()
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.LoadAllSyntax,
		Dir:  filepath.Join(dir, "src"),
		Env:  append(os.Environ(), "GOPATH="+dir, "GO111MODULE=off", "GOPROXY=off", "GOFLAGS="),
	}, "heldout2/...")
	if err != nil {
		t.Fatal(err)
	}
	if n := packages.PrintErrors(pkgs); n > 0 {
		t.Fatalf("%d errors loading the second held-out corpus", n)
	}
	if len(pkgs) < 30 {
		t.Fatalf("loaded %d packages of heldout2, want at least 30", len(pkgs))
	}
}
