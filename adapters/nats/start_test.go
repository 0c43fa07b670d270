package nats

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// publishIDs publishes n messages with IDs "<prefix>-<i>" to source.
func (c *conn) publishIDs(t *testing.T, source, prefix string, n int) []string {
	t.Helper()
	var ids []string
	var msgs []*consumer.Message
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		ids = append(ids, id)
		msgs = append(msgs, &consumer.Message{ID: id, Body: []byte(id)})
	}
	c.publish(t, source, msgs...)
	return ids
}

// A new durable consumer starts where Config.Start says; an existing one
// keeps its position whatever its Start.
func TestStartPosition(t *testing.T) {
	t.Parallel()
	c := connect(t)
	source := fmt.Sprintf("start.%d", time.Now().UnixNano())
	old := c.publishIDs(t, source, "old", 3)
	between := time.Now()
	recent := c.publishIDs(t, source, "recent", 3)

	cases := []struct{ name, start string }{
		{"default", ""},
		{"earliest", "earliest"},
		{"latest", "latest"},
		{"time", between.UTC().Format(time.RFC3339Nano)},
		{"before-retention", between.Add(-48 * time.Hour).UTC().Format(time.RFC3339)},
	}
	sources := map[string]*Source{}
	for _, cs := range cases {
		src := c.newSource(t, Config{Source: source, Consumer: cs.name, Start: cs.start})
		t.Cleanup(func() { _ = src.Close(context.Background()) })
		sources[cs.name] = src
	}
	later := c.publishIDs(t, source, "later", 3)
	all := slices.Concat(old, recent, later)
	want := map[string][]string{
		"default":          all,
		"earliest":         all,
		"latest":           later,
		"time":             slices.Concat(recent, later),
		"before-retention": all,
	}
	for _, cs := range cases {
		got := adaptertest.AckN(t, sources[cs.name], len(want[cs.name]), 20*time.Second)
		slices.Sort(got)
		w := slices.Sorted(slices.Values(want[cs.name]))
		if !slices.Equal(got, w) {
			t.Errorf("start %q (%s): got %v, want %v", cs.start, cs.name, got, w)
		}
	}

	// Restarted with start=latest, the existing "earliest" consumer still
	// gets what was published while it was down.
	if err := sources["earliest"].Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	missed := c.publishIDs(t, source, "missed", 3)
	restarted := c.newSource(t, Config{Source: source, Consumer: "earliest", Start: "latest"})
	t.Cleanup(func() { _ = restarted.Close(context.Background()) })
	if got := adaptertest.AckN(t, restarted, 3, 20*time.Second); !slices.Equal(slices.Sorted(slices.Values(got)), missed) {
		t.Errorf("restarted consumer got %v, want %v", got, missed)
	}
}
