package vet_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/oncely/oncely/vet"
)

// The testdata packages seed, per analyzer, cases that must be reported
// (each marked with a // want comment) and cases that must not (everything
// else in the package): analysistest fails on a missing or an extra report.

func TestTxEscape(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), vet.TxEscape, "txescape")
}

func TestNoDedupe(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), vet.NoDedupe, "nodedupe", "nodedupeclaim")
}

func TestEscape(t *testing.T) { analysistest.Run(t, analysistest.TestData(), vet.Escape, "escape") }

func TestSettle(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), vet.Settle, "settle", "settlelib", "github.com/oncely/oncely/adapters/fake", "github.com/oncely/oncely/examples/shop")
}

// TestRoutes pins the reports of effects outside the database, of calls
// through fields bound to the pool, and of the transaction leaving by a
// channel or an errgroup, with their messages, the allow comment, and the
// cases that must stay silent (a header read, a joined group that computes).
func TestRoutes(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), vet.TxEscape, "effects")
	analysistest.Run(t, analysistest.TestData(), vet.Escape, "routes")
}
