// Command oncelyvet runs oncely's analyzers (package vet: txescape,
// nodedupe, escape, settle) on Go packages. It is a standalone checker and
// a vet tool alike:
//
//	oncelyvet ./...
//	go vet -vettool=$(which oncelyvet) ./...
//
// It exits 0 when nothing is reported, 3 when something is (as go vet's
// analyzers do), and 1 when the packages do not load. Each analyzer can be
// turned off with -NAME=false, e.g. -settle=false. `oncely vet` runs the
// same analyzers.
package main

import (
	"golang.org/x/tools/go/analysis/multichecker"

	"github.com/oncely/oncely/vet"
)

func main() { multichecker.Main(vet.Analyzers()...) }
