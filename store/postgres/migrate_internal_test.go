package postgres

import (
	"testing"
	"testing/fstest"
)

func TestLoadMigrationsChecksNumbering(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"gap":       {"m/0001_a.sql": {}, "m/0003_c.sql": {}},
		"repeat":    {"m/0001_a.sql": {}, "m/0001_b.sql": {}},
		"no-number": {"m/init.sql": {}},
		"zero":      {"m/0000_a.sql": {}},
	} {
		if _, err := loadMigrations(fsys, "m"); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	ms, err := loadMigrations(fstest.MapFS{"m/0002_b.sql": {Data: []byte("B")}, "m/0001_a.sql": {Data: []byte("A")}, "m/README": {}}, "m")
	if err != nil || len(ms) != 2 || ms[0].SQL != "A" || ms[1].Version != 2 {
		t.Fatalf("got %+v, %v", ms, err)
	}
}
