package adapters

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/oncely/oncely/consumer"
)

// fakeSession hands out letters once and records removals.
type fakeSession struct {
	letters []*consumer.Message
	removed []string
}

func (f *fakeSession) total() int { return len(f.letters) }

func (f *fakeSession) next(ctx context.Context, n int) ([]heldLetter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []heldLetter
	for len(out) < n && len(f.letters) > 0 {
		m := f.letters[0]
		f.letters = f.letters[1:]
		out = append(out, heldLetter{msg: m, remove: func(ctx context.Context) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			f.removed = append(f.removed, m.ID)
			return nil
		}})
	}
	return out, nil
}

func (f *fakeSession) close(context.Context) error { return nil }

// A redrive cancelled during a publish still removes that message and stops
// before the next one. The bug it catches: publish and removal under the
// caller's context, which leaves a published message in the dead-letter
// destination too when the cancel lands in between.
func TestRedriveCancelStopsBetweenMessages(t *testing.T) {
	s := &fakeSession{}
	for i := range 3 {
		s.letters = append(s.letters, &consumer.Message{ID: fmt.Sprintf("m%d", i)})
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var published []string
	res, err := redrive(ctx, s, func(_ context.Context, m *consumer.Message) error {
		published = append(published, m.ID)
		if m.ID == "m1" {
			cancel() // lands between this publish and its removal
		}
		return nil
	}, RedriveOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if fmt.Sprint(published) != "[m0 m1]" || fmt.Sprint(s.removed) != "[m0 m1]" || res.Redriven != 2 {
		t.Fatalf("published %v, removed %v, redriven %d; want m0 and m1 published and removed, m2 untouched", published, s.removed, res.Redriven)
	}
}
