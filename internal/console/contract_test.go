package console

import (
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every data-testid the templates use is listed in doc.go's element
// contract, and every listed one is used: the browser tests rely on it.
func TestElementContract(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(doc), "# Element contract")
	listed := map[string]bool{}
	for _, line := range strings.Split(after, "\n") {
		line = strings.TrimPrefix(line, "//")
		if !strings.HasPrefix(line, "\t") {
			continue
		}
		line = regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(line, "")
		if _, rest, ok := strings.Cut(line, ":"); ok {
			line = rest
		}
		for _, f := range strings.Fields(line) {
			listed[f] = true
		}
	}
	used := map[string]bool{}
	re := regexp.MustCompile(`data-testid="([a-z0-9-]+)"`)
	err = fs.WalkDir(templateFS, "templates", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(templateFS, p)
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for id := range used {
		if !listed[id] {
			t.Errorf("data-testid %q is used in the templates but not listed in doc.go", id)
		}
	}
	for id := range listed {
		if !used[id] {
			t.Errorf("data-testid %q is listed in doc.go but no template uses it", id)
		}
	}
}
