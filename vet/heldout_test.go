package vet_test

import (
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"
)

// heldOutRounds are the held-out corpora (docs/teams.md), each written
// apart from the analyzers and measured on them untuned first, with the
// floors the analyzers hold on it now: a change that catches fewer bugs or
// reports more on unmarked lines fails; one that catches more raises the
// floor.
var heldOutRounds = []struct {
	pattern                string
	bugs, caught, falsePos int
}{
	// 44 packages; first measured at 14 of 22 with 3 reports on unmarked
	// lines, then tuned (the analyzers were extended against its misses).
	{"heldout/...", 22, 22, 0},
	// 30 service packages, written after that tuning; first measured at
	// 10 of 15 with 1 report off its marked line, then tuned (the
	// analyzers were extended against its misses).
	{"heldout2/...", 15, 15, 0},
	// 30 service packages by another hand, written while heldout2's rules
	// were being added; measured untuned at 14 of 15 with 1 report on an
	// unmarked line before them, 15 of 15 with 2 (a Redis lock whose
	// helper returns its release) after; then tuned against those two.
	{"heldout3/...", 15, 15, 0},
	// 33 service packages by another hand, written after heldout2's rules;
	// measured untuned at 13 of 16 with no report on its 17 correct
	// packages, then tuned (an option function's interface field, a file
	// written in the handler, a chain and Config from helpers).
	{"heldout4/...", 16, 16, 0},
	// 30 service packages by another hand, written while heldout4's rules
	// were being added; measured untuned on them: 13 of 15 with 1 report
	// off its line (an errgroup goroutine reported on g.Go, the bug marked
	// on the tx use inside it). Tuned since: that report now names the
	// use as related information, and a route table whose entries carry
	// their own middleware (harvest, missed then) is reported on the
	// entry without idempotency.
	{"heldout5/...", 15, 15, 0},
	// 30 service packages by another hand, written after heldout5's
	// measure; measured untuned: 12 of 15 with 4 reports off their marks.
	// Tuned since for a time.AfterFunc report (it now names the tx use
	// inside it), a local rebound from the pool-bound queries to
	// q.WithTx(tx) (airline, a correct package: its 2 reports are gone),
	// a chain from a dependency container's field (gym, missed then) and
	// a repository of another package writing through its pool, reported
	// on the handler's call where the bug is marked on the repository's
	// statement (telbilling: the report now names that statement as
	// related information).
	{"heldout6/...", 15, 15, 0},
	// 30 service packages by another hand, written blind after heldout6's
	// measure; measured untuned: 14 of 15, no report on its 15 correct
	// packages. Tuned since for its miss: the tx stored in a value kept
	// in a map on the receiver, for a ticker loop (carnival).
	{"heldout7/...", 15, 15, 0},
	// 30 service packages by another hand (ports and adapters, decorators,
	// handler maps), written blind at the same time as heldout7; measured
	// untuned: 9 of 15 with 4 reports off the marks (a read through a
	// prepared *sql.Stmt and a pool-bound read taken as writes; the ctx
	// and a closure sent to a worker reported inside the worker's package).
	// Tuned since: a Stmt's read and a port's read method are reads; a
	// component's send is reported on the handler's call; decorators (of
	// another package, or returned by a helper) are followed. Left: a
	// handler map, a backfill and two dedupe misses (ferry, kiosk,
	// stationery), since caught by nodedupe: a platform middleware the
	// package chains beside a claim elsewhere (ferry), a chain listed
	// through a helper handing back its parameters (kiosk), a handler
	// beginning its own transaction behind logging only (stationery).
	{"heldout8/...", 15, 15, 0},
	// 30 layered services by another hand (sub-packages per layer,
	// generic repositories, embedded stores, unit-of-work helpers), written
	// blind after heldout6's rules; measured untuned: 6 of 15 with 2
	// reports on correct packages (a *sql.DB read and a Redis lock helper,
	// each in another package of the service). Tuned since for the
	// handlers it missed because it did not see them wired: a function of
	// the shape postgres.HandlerFunc takes is a transactional handler by
	// its type, and a function of another package handing the pool to a
	// querying parameter (a store's InTx over pgx.BeginFunc) runs outside
	// the claim (11 of 15); a lock taken by another package's SetNX and
	// released by the handler's deferred Del is a lock, and PostGIS's st_
	// functions read (its 2 wrong reports gone).
	{"heldout9/...", 15, 11, 0},
	// 30 small-team packages by another hand (closures inline in Run,
	// function-typed variables, type switches, five brokers), written
	// blind after heldout6's rules; measured untuned: 13 of 15, no report
	// on its 15 correct packages. Missed: two consumers whose chains hold
	// only logging or a local timing middleware (geo, rewards). 14 of 15
	// with heldout8's nodedupe rules, written without sight of it
	// (rewards caught).
	{"heldout10/...", 15, 14, 0},
}

// TestHeldOut runs every analyzer over each held-out round (ANSWERS.md in
// its folder). A bug counts as caught when a report is on its // want line
// or inside the innermost statement holding that line, or points there in
// its related information (a statement in a helper reported where it is,
// with the handler's call into the helper as related information: the two
// lines a reviewer may mark); every other report is a false positive.
func TestHeldOut(t *testing.T) {
	pkgs, graph := analyzedTestdata(t)
	for _, r := range heldOutRounds {
		round := strings.TrimSuffix(r.pattern, "/...")
		t.Run(round, func(t *testing.T) {
			caught, falsePos, bugs := measureHeldOut(t, pkgs, graph, round+"/")
			if bugs != r.bugs {
				t.Errorf("%s has %d marked bugs, want %d (ANSWERS.md)", r.pattern, bugs, r.bugs)
			}
			if caught < r.caught {
				t.Errorf("caught %d of %d bugs, fewer than the floor %d", caught, bugs, r.caught)
			}
			if caught > r.caught {
				t.Errorf("caught %d of %d bugs, more than the floor %d: raise it (and docs/teams.md)", caught, bugs, r.caught)
			}
			if falsePos > r.falsePos {
				t.Errorf("%d reports on unmarked lines, more than the ceiling %d", falsePos, r.falsePos)
			}
		})
	}
}

// measureHeldOut measures the analysis graph of pkgs on the packages whose
// path starts with prefix (a round): it returns the marked bugs caught, the
// reports on unmarked lines and the marked bugs, logging each.
func measureHeldOut(t *testing.T, pkgs []*packages.Package, graph *checker.Graph, prefix string) (caught, falsePos, total int) {
	t.Helper()
	type span struct {
		file       string
		from, to   int // lines of the innermost statement
		pkg, mline string
	}
	var bugs []span
	for _, pkg := range pkgs {
		if !strings.HasPrefix(pkg.PkgPath, prefix) {
			continue
		}
		for _, f := range pkg.Syntax {
			for _, cg := range f.Comments {
				for _, c := range cg.List {
					if strings.HasPrefix(c.Text, "// want ") {
						p := pkg.Fset.Position(c.Slash)
						from, to := innermostStmt(pkg.Fset, f, p.Line)
						bugs = append(bugs, span{p.Filename, from, to, pkg.PkgPath, fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)})
					}
				}
			}
		}
	}
	caughtBy := make([]string, len(bugs))
	for _, act := range graph.Roots {
		if !strings.HasPrefix(act.Package.PkgPath, prefix) {
			continue
		}
		if act.Err != nil {
			t.Fatalf("%s on %s: %v", act.Analyzer.Name, act.Package.PkgPath, act.Err)
		}
		for _, d := range act.Diagnostics {
			p := act.Package.Fset.Position(d.Pos)
			// A report points at its position and at its related
			// information (the handler's call into a helper).
			at := []token.Position{p}
			for _, r := range d.Related {
				at = append(at, act.Package.Fset.Position(r.Pos))
			}
			hit := false
			for i, b := range bugs {
				for _, q := range at {
					if b.file == q.Filename && b.from <= q.Line && q.Line <= b.to {
						hit = true
						if caughtBy[i] == "" {
							caughtBy[i] = act.Analyzer.Name + ": " + short(d.Message)
						}
					}
				}
			}
			if !hit {
				falsePos++
				t.Logf("report on an unmarked line %s:%d: %s: %s", p.Filename, p.Line, act.Analyzer.Name, d.Message)
			}
		}
	}
	var rows []string
	for i, b := range bugs {
		if caughtBy[i] != "" {
			caught++
			rows = append(rows, fmt.Sprintf("caught  %-28s %s", b.pkg, caughtBy[i]))
		} else {
			rows = append(rows, fmt.Sprintf("MISSED  %-28s %s", b.pkg, b.mline))
		}
	}
	sort.Strings(rows)
	for _, r := range rows {
		t.Log(r)
	}
	t.Logf("%d bugs, %d caught (recall %.0f %%), %d reports on unmarked lines", len(bugs), caught, 100*float64(caught)/float64(len(bugs)), falsePos)
	return caught, falsePos, len(bugs)
}

// innermostStmt returns the first and last line of the smallest statement
// of f that holds line (line, line without one).
func innermostStmt(fset *token.FileSet, f *ast.File, line int) (int, int) {
	from, to := line, line
	best := -1
	ast.Inspect(f, func(n ast.Node) bool {
		s, ok := n.(ast.Stmt)
		if !ok || n == nil {
			return true
		}
		if _, block := s.(*ast.BlockStmt); block {
			return true
		}
		a, b := fset.Position(s.Pos()).Line, fset.Position(s.End()).Line
		if a <= line && line <= b && (best < 0 || b-a < best) {
			best, from, to = b-a, a, b
		}
		return true
	})
	return from, to
}
