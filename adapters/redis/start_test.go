package redis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// addAt appends n entries with IDs "<prefix>-<i>" to stream, with entry IDs
// in the millisecond at (or Redis's clock when at is zero).
func addAt(t *testing.T, client goredis.UniversalClient, stream, prefix string, n int, at time.Time) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		ids = append(ids, id)
		entry := "*"
		if !at.IsZero() {
			entry = strconv.FormatInt(at.UnixMilli(), 10) + "-*"
		}
		if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: stream, ID: entry, Values: EntryFields(&consumer.Message{ID: id, Body: []byte(id)})}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// A new consumer group starts where Config.Start says; an existing one
// keeps its position whatever its Start.
func TestStartPosition(t *testing.T) {
	t.Parallel()
	client := newClient(t)
	stream := fmt.Sprintf("start-%d", time.Now().UnixNano())
	now := time.Now()
	old := addAt(t, client, stream, "old", 3, now.Add(-2*time.Hour))
	recent := addAt(t, client, stream, "recent", 3, now.Add(-time.Minute))

	cases := []struct{ name, start string }{
		{"default", ""},
		{"earliest", "earliest"},
		{"latest", "latest"},
		{"time", now.Add(-time.Hour).UTC().Format(time.RFC3339)},
		{"before-retention", now.Add(-48 * time.Hour).UTC().Format(time.RFC3339)},
	}
	sources := map[string]*Source{}
	var keys []string
	for _, c := range cases {
		sources[c.name] = newSource(t, client, Config{Stream: stream, Consumer: c.name, Start: c.start})
		keys = append(keys, RetryStream(stream, c.name), DelayedKey(stream, c.name), DeadLetterStream(stream, c.name))
	}
	t.Cleanup(func() { _ = client.Del(context.Background(), append(keys, stream)...).Err() })
	later := addAt(t, client, stream, "later", 3, time.Time{})
	all := slices.Concat(old, recent, later)
	want := map[string][]string{
		"default":          all,
		"earliest":         all,
		"latest":           later,
		"time":             slices.Concat(recent, later),
		"before-retention": all,
	}
	for _, c := range cases {
		if got := adaptertest.AckN(t, sources[c.name], len(want[c.name]), 20*time.Second); !slices.Equal(got, want[c.name]) {
			t.Errorf("start %q (%s): got %v, want %v", c.start, c.name, got, want[c.name])
		}
	}

	// Restarted with start=latest, the existing "earliest" group still gets
	// what was added while it was down.
	if err := sources["earliest"].Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	missed := addAt(t, client, stream, "missed", 3, time.Time{})
	restarted := newSource(t, client, Config{Stream: stream, Consumer: "earliest", Start: "latest"})
	if got := adaptertest.AckN(t, restarted, 3, 20*time.Second); !slices.Equal(got, missed) {
		t.Errorf("restarted group got %v, want %v", got, missed)
	}
}
