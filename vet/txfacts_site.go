package vet

import (
	"go/token"
	"path/filepath"
	"strconv"

	"golang.org/x/tools/go/analysis"
)

// factSite is where the statement a fact is about is, in its own
// package: its file and line, kept as text, since a fact crosses from one
// package's analysis to another's serialized under go vet, where a
// token.Pos of another package's file set means nothing.
//
// A report on the handler's call into another package's function names
// the site in its message ("[the statement at usage.go:17]") and, where
// the file is in the reporting pass's file set, points at it as related
// information. In one process (oncely vet, analysistest, the checker) the
// other package's file is there; under go vet -vettool (unitchecker) only
// the stand-in files of the export data are, with lines up to the last
// declaration they record, so a site past it is named in the message
// only.
type factSite struct {
	File string
	Line int
}

// siteOf returns the site of pos in the package under analysis.
func siteOf(pass *analysis.Pass, pos token.Pos) factSite {
	p := pass.Fset.Position(pos)
	return factSite{File: p.Filename, Line: p.Line}
}

func (s factSite) String() string {
	if s.File == "" {
		return ""
	}
	return filepath.Base(s.File) + ":" + strconv.Itoa(s.Line)
}

// related returns the site as related information of a report in pass
// (see factSite), or nil when no file of pass's file set has the line.
func (s factSite) related(pass *analysis.Pass, what string) []analysis.RelatedInformation {
	if s.File == "" || s.Line <= 0 {
		return nil
	}
	pos := token.NoPos
	pass.Fset.Iterate(func(f *token.File) bool {
		if f.Name() == s.File && s.Line <= f.LineCount() {
			pos = f.LineStart(s.Line)
			return false
		}
		return true
	})
	if !pos.IsValid() {
		return nil
	}
	return []analysis.RelatedInformation{{Pos: pos, Message: what}}
}

// route is how a function reaches a statement (see reachVia): Via names
// the calls it goes through, At is the statement.
type route struct {
	Via string
	At  factSite
}
