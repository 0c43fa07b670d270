package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the import path every rule's patterns are relative to.
const module = "github.com/oncely/oncely"

// importRule says what the packages matching pkg may import of the module.
// A pattern is a path relative to the module, exact ("store") or with its
// subtree ("store/...").
type importRule struct {
	pkg string
	// only, when not nil, lists every module package pkg may import
	// directly; nil: no such limit.
	only []string
	// never lists module packages pkg may not depend on, directly or through
	// another package.
	never []string
	why   string
}

// brokers are the adapters under adapters/, one package tree each.
var brokers = []string{"kafka", "memory", "nats", "rabbitmq", "redis", "sqs"}

// importRules is the layout, one line per part. Changing a rule changes the
// architecture: update README.md's package table and docs/runtime.md with it.
var importRules = append([]importRule{
	{pkg: "retry", only: []string{}, why: "the retry policy is a leaf: everything else builds on it"},
	{pkg: "consumer", only: []string{"retry"}, why: "the runtime and its contracts stand on the retry policy alone"},
	{pkg: "store", only: []string{}, why: "the store seam is an interface between the middleware and a storage"},
	{pkg: "store/...", only: []string{"consumer", "store/..."},
		why: "a store records claims for the idempotency middleware; it knows no broker, no middleware and no outbox"},
	{pkg: "middleware/...", only: []string{"consumer", "retry", "store"},
		why: "middleware wraps handlers through the store seam, never a store implementation or a broker"},
	{pkg: "adapters/...", never: []string{"store/...", "middleware/...", "outbox/..."},
		why: "adapters turn broker records into deliveries; they know nothing of claims or the outbox"},
	{pkg: "outbox/...", only: []string{"adapters", "consumer", "retry", "store/postgres"},
		why: "the outbox writes rows in the store's transaction and publishes them through any broker"},
	{pkg: "vet/...", only: []string{}, why: "vet reads handler code by import path; it links none of the runtime it checks"},
}, brokerRules()...)

// brokerRules keeps each broker's adapter apart from the others and from
// Open (package adapters), which imports them all.
func brokerRules() []importRule {
	var rules []importRule
	for _, b := range brokers {
		never := []string{"adapters"}
		for _, other := range brokers {
			if other != b {
				never = append(never, "adapters/"+other+"/...")
			}
		}
		rules = append(rules, importRule{pkg: "adapters/" + b + "/...", never: never,
			why: "one broker's adapter imports no other adapter and not Open (adapters)"})
	}
	shared := []string{"adapters"}
	for _, b := range brokers {
		shared = append(shared, "adapters/"+b+"/...")
	}
	rules = append(rules, importRule{pkg: "adapters/internal/...", never: shared,
		why: "what the broker adapters share sits below them: it imports no adapter and not Open (adapters)"})
	return rules
}

// listed is what `go list -json` says of one package.
type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// goList runs `go list -json` on the whole module with the build tags and
// returns its packages by import path.
func goList(t *testing.T, tags string) map[string]listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-tags", tags, "-json=ImportPath,Imports,Deps,Error", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -tags %q: %v\n%s", tags, err, stderr.Bytes())
	}
	pkgs := map[string]listed{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -tags %q: decoding: %v", tags, err)
		}
		if p.Error != nil {
			t.Errorf("go list -tags %q: %s: %s", tags, p.ImportPath, p.Error.Err)
		}
		pkgs[p.ImportPath] = p
	}
	if len(pkgs) < 30 {
		t.Fatalf("go list -tags %q listed %d packages; want the whole module", tags, len(pkgs))
	}
	return pkgs
}

// relative returns path relative to the module, and false for a package
// outside it.
func relative(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// matches reports whether the module-relative path rel matches pattern.
func matches(pattern, rel string) bool {
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == tree || strings.HasPrefix(rel, tree+"/")
	}
	return rel == pattern
}

func matchesAny(patterns []string, rel string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, rel) })
}

// isKit reports whether the module-relative path names a test kit: a
// package whose name ends in "test" (pgtest, envtest, adaptertest, …), which
// only tests may import.
func isKit(rel string) bool {
	return strings.HasSuffix(rel[strings.LastIndex(rel, "/")+1:], "test")
}

// TestImportRules lists the module's packages with `go list` (non-test
// files, under the default build tags and under every tag production or
// fault code uses) and checks each production import against the layout:
// no production package imports a test kit, and every package keeps its
// part's rule in importRules. Catches: a production package that links a
// test kit, an arrow that runs against the architecture (store → adapter,
// adapter → store, consumer → anything but retry), even through another
// package.
func TestImportRules(t *testing.T) {
	for _, tags := range []string{"", "faults,oncely_plainsched"} {
		pkgs := goList(t, tags)
		ruled := map[string]bool{}
		for path, p := range pkgs {
			rel, _ := relative(path)
			checkPackage(t, tags, rel, p, pkgs)
			for _, r := range importRules {
				ruled[r.pkg] = ruled[r.pkg] || matches(r.pkg, rel)
			}
			if top, ok := strings.CutPrefix(rel, "adapters/"); ok {
				if b, _, _ := strings.Cut(top, "/"); b != "adaptertest" && b != "internal" && !slices.Contains(brokers, b) {
					t.Errorf("%s: the broker %q is missing from brokers, so no rule keeps it apart from the others", rel, b)
				}
			}
		}
		for _, r := range importRules {
			if !ruled[r.pkg] {
				t.Errorf("[tags %q] the rule for %s matches no package: moved or renamed? update importRules", tags, r.pkg)
			}
		}
	}
}

// checkPackage reports every rule the package rel (listed as p) breaks.
func checkPackage(t *testing.T, tags, rel string, p listed, pkgs map[string]listed) {
	kit := isKit(rel)
	for _, imp := range p.Imports {
		irel, ok := relative(imp)
		if !ok {
			continue
		}
		if !kit && isKit(irel) {
			t.Errorf("[tags %q] %s imports the test kit %s: only tests and other kits may import a package whose name ends in \"test\"", tags, rel, irel)
		}
		for _, r := range importRules {
			if matches(r.pkg, rel) && r.only != nil && !matchesAny(r.only, irel) {
				t.Errorf("[tags %q] %s imports %s: %s may import only %v of oncely (%s)", tags, rel, irel, r.pkg, r.only, r.why)
			}
		}
	}
	for _, dep := range p.Deps {
		drel, ok := relative(dep)
		if !ok {
			continue
		}
		for _, r := range importRules {
			if matches(r.pkg, rel) && matchesAny(r.never, drel) {
				t.Errorf("[tags %q] %s depends on %s (through %s): %s never does (%s)", tags, rel, drel, through(p, dep, pkgs), r.pkg, r.why)
			}
		}
	}
}

// through names the direct imports of p by which it depends on dep.
func through(p listed, dep string, pkgs map[string]listed) string {
	var via []string
	for _, imp := range p.Imports {
		if imp == dep || slices.Contains(pkgs[imp].Deps, dep) {
			rel, ok := relative(imp)
			if !ok {
				rel = imp
			}
			via = append(via, rel)
		}
	}
	return strings.Join(via, ", ")
}
