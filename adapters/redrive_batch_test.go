package adapters

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
)

// fakeDLQ is a dead-letter destination and its source, recording every
// publish and removal so the tests can check the redrive's order of work.
type fakeDLQ struct {
	t         *testing.T
	mu        sync.Mutex
	letters   []*consumer.Message
	removed   map[int]bool   // letter index → removed
	confirmed map[string]int // ID → copies a publish confirmed
	arrived   map[string]int // ID → copies on the source, confirmed or not
	calls     [][]string     // the IDs of each publish call
	violation []string       // removals of letters whose copy was not confirmed

	// failAt, when > 0, makes the publish that would put the failAt-th copy
	// (counting from 1 over the whole run) on the source fail after the
	// copies before it in that call arrived: a batch failing part-way.
	failAt int
	// during, when set, runs inside each publish after its copies arrived
	// and before it returns (and so before the batch is confirmed).
	during func()
}

func newFakeDLQ(t *testing.T, n int, reason func(i int) string) *fakeDLQ {
	f := &fakeDLQ{t: t, removed: map[int]bool{}, confirmed: map[string]int{}, arrived: map[string]int{}}
	for i := range n {
		id := "d-" + strconv.Itoa(i)
		h := map[string]string{consumer.HeaderDeadLetterReason: reason(i), consumer.HeaderError: "boom"}
		f.letters = append(f.letters, &consumer.Message{ID: id, Key: id, Body: []byte(id), Headers: h, Offset: int64(i)})
	}
	return f
}

func (f *fakeDLQ) publish(ctx context.Context, msgs ...*consumer.Message) error {
	f.mu.Lock()
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	f.calls = append(f.calls, ids)
	sent := 0
	for _, n := range f.arrived {
		sent += n
	}
	for _, m := range msgs {
		sent++
		if f.failAt > 0 && sent == f.failAt {
			f.mu.Unlock()
			return errors.New("broker refused the batch")
		}
		f.arrived[m.ID]++
	}
	f.mu.Unlock()
	if f.during != nil {
		f.during()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range msgs {
		f.confirmed[m.ID]++
	}
	return nil
}

// session opens a snapshot of the letters not removed; batch selects a
// session that removes through removeAll.
func (f *fakeDLQ) session(batch bool) dlqSession {
	s := &fakeSession{f: f}
	f.mu.Lock()
	for i := range f.letters {
		if !f.removed[i] {
			s.idx = append(s.idx, i)
		}
	}
	f.mu.Unlock()
	if batch {
		return fakeBatchSession{s}
	}
	return s
}

// remove removes letter i; like a broker call it fails once ctx is done.
func (f *fakeDLQ) remove(ctx context.Context, i int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if id := f.letters[i].ID; f.confirmed[id] == 0 {
		f.violation = append(f.violation, id)
	}
	f.removed[i] = true
	return nil
}

// left is the IDs still dead-lettered.
func (f *fakeDLQ) left() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for i, m := range f.letters {
		if !f.removed[i] {
			out[m.ID] = true
		}
	}
	return out
}

// checkNothingLost: no letter was removed before its copy was confirmed,
// and every letter is on the source (confirmed) or still dead-lettered.
func (f *fakeDLQ) checkNothingLost(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Empty(t, f.violation, "dead letters removed before their copy was confirmed")
	for i, m := range f.letters {
		if f.removed[i] {
			require.Positive(t, f.confirmed[m.ID], "%s removed but never confirmed on the source", m.ID)
		}
	}
}

type fakeSession struct {
	f   *fakeDLQ
	idx []int
	pos int
}

func (s *fakeSession) total() int { return len(s.idx) }

func (s *fakeSession) next(_ context.Context, n int) ([]heldLetter, error) {
	var out []heldLetter
	for ; s.pos < len(s.idx) && len(out) < n; s.pos++ {
		i := s.idx[s.pos]
		out = append(out, heldLetter{msg: s.f.letters[i], ref: strconv.Itoa(i), remove: func(ctx context.Context) error {
			return s.f.remove(ctx, i)
		}})
	}
	return out, nil
}

func (s *fakeSession) close(context.Context) error { return nil }

type fakeBatchSession struct{ *fakeSession }

func (s fakeBatchSession) removeAll(ctx context.Context, hs []heldLetter) error {
	for _, h := range hs {
		i, err := strconv.Atoi(h.ref)
		if err != nil {
			return err
		}
		if err := s.f.remove(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

func exhaustedEveryThird(i int) string {
	if i%3 == 1 {
		return consumer.ReasonPermanent
	}
	return consumer.ReasonExhausted
}

// bothSessions runs a test with per-letter removal and with removeAll.
func bothSessions(t *testing.T, run func(t *testing.T, batch bool)) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("removeAll=%v", batch), func(t *testing.T) { run(t, batch) })
	}
}

// TestRedriveBatchFailingPublishRemovesNothingUnconfirmed: 300 dead letters,
// 200 selected; the publish of the 130th copy fails part-way through its
// batch (the copies before it in the batch reached the source). The redrive
// fails; every letter of that batch and after is still dead-lettered, every
// letter removed had its copy confirmed, Progress reported exactly the
// letters of the confirmed batches. A second redrive moves the rest: every
// selected ID is then on the source and no selected letter is left; the
// only second copies are of the failed batch's letters that reached the
// source unconfirmed (what the idempotency claim absorbs).
// Catches removing a letter when its copy is queued or sent rather than
// confirmed (each removal is checked against the confirmations), removing
// a failed batch, and losing a batch's letters on an error.
func TestRedriveBatchFailingPublishRemovesNothingUnconfirmed(t *testing.T) {
	bothSessions(t, func(t *testing.T, batch bool) {
		f := newFakeDLQ(t, 300, exhaustedEveryThird)
		f.failAt = 130
		var seen []RedriveProgress
		opts := RedriveOptions{Reason: consumer.ReasonExhausted, Progress: func(p RedriveProgress) { seen = append(seen, p) }}
		res, err := redrive(t.Context(), f.session(batch), f.publish, opts)
		require.ErrorContains(t, err, "broker refused the batch")
		require.ErrorContains(t, err, "they stay in the dead-letter destination")
		f.checkNothingLost(t)
		require.Equal(t, 100, res.Redriven, "the first batch of 100 was confirmed, the second failed")
		require.Len(t, seen, res.Seen, "Progress once per letter of the confirmed batch")
		left := f.left()
		require.Len(t, left, 300-100, "only the confirmed batch left the dead-letter destination")

		f.failAt = 0
		res, err = redrive(t.Context(), f.session(batch), f.publish, RedriveOptions{Reason: consumer.ReasonExhausted})
		require.NoError(t, err)
		require.Equal(t, 100, res.Redriven)
		f.checkNothingLost(t)
		for i, m := range f.letters {
			selected := exhaustedEveryThird(i) == consumer.ReasonExhausted
			require.Equal(t, !selected, f.left()[m.ID], "%s left in the dead-letter destination", m.ID)
			switch n := f.arrived[m.ID]; {
			case !selected:
				require.Zero(t, n, "%s was not selected", m.ID)
			case n == 2:
				require.Equal(t, 1, f.confirmed[m.ID], "%s confirmed twice", m.ID)
				require.Contains(t, f.calls[1], m.ID, "only the failed batch's copies reach the source twice")
			default:
				require.Equal(t, 1, n, "%s on the source", m.ID)
			}
		}
	})
}

// checkNoneDuplicated: no letter whose copy was confirmed is still
// dead-lettered (it would be redriven a second time).
func (f *fakeDLQ) checkNoneDuplicated(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.letters {
		require.False(t, f.confirmed[m.ID] > 0 && !f.removed[i], "%s confirmed on the source but still dead-lettered", m.ID)
	}
}

// published is the number of copies handed to publish.
func (f *fakeDLQ) published() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += len(c)
	}
	return n
}

// TestRedriveProgressOncePerLetterInOrder: 250 dead letters, a third not
// selected, two second copies (one in the same batch as its first, one a
// batch later). Progress is called once per letter in session order (Seen
// 1, 2, 3, ...), Redriven counts the selected letters up to it, and when it
// is called every copy published so far was confirmed and its letter
// removed, duplicates too. Catches Progress once per batch, out of order or
// skipped for skipped letters, and Progress reported before its batch was
// confirmed and removed.
func TestRedriveProgressOncePerLetterInOrder(t *testing.T) {
	bothSessions(t, func(t *testing.T, batch bool) {
		f := newFakeDLQ(t, 250, exhaustedEveryThird)
		f.letters[10].ID = f.letters[3].ID  // a second copy in the first batch
		f.letters[220].ID = f.letters[5].ID // and one in the second
		f.letters[221].ID = f.letters[1].ID // the ID of a skipped letter, selected itself: redriven
		var got []RedriveProgress
		redriven, skipped, dups := 0, 0, 0
		done := map[string]bool{}
		progress := func(p RedriveProgress) {
			got = append(got, p)
			i := len(got) - 1
			m := f.letters[i]
			dup := done[m.ID]
			switch {
			case dup:
				dups++
			case exhaustedEveryThird(i) == consumer.ReasonExhausted:
				redriven++
				done[m.ID] = true
			default:
				skipped++
			}
			require.Equal(t, RedriveProgress{Seen: i + 1, Total: 250, Redriven: redriven, Skipped: skipped, DuplicateCopies: dups}, p)
			f.mu.Lock()
			require.Equal(t, dup || exhaustedEveryThird(i) == consumer.ReasonExhausted, f.removed[i], "letter %d removed", i)
			for _, c := range f.calls {
				for _, id := range c {
					require.Positive(t, f.confirmed[id], "%s published, not confirmed, while Progress runs", id)
				}
			}
			f.mu.Unlock()
		}
		res, err := redrive(t.Context(), f.session(batch), f.publish, RedriveOptions{Reason: consumer.ReasonExhausted, Progress: progress})
		require.NoError(t, err)
		require.Len(t, got, 250)
		require.Equal(t, RedriveResult{Seen: 250, Redriven: redriven, Skipped: 250 - redriven - 2, DuplicateCopies: 2}, res)
		require.Equal(t, redriven, f.published(), "one copy per redriven ID")
		f.checkNothingLost(t)
		for i := range f.letters {
			require.Equal(t, !f.removed[i], i%3 == 1 && i != 10 && i != 220, "letter %d left", i)
		}
	})
}

// TestRedriveLimitExact: 500 dead letters, Limit 137, unpaced and at Rate
// 1000 (batches of 100 and of 50): exactly 137 copies are published and 137
// letters removed, and no publish carries more than a batch (at Rate 1000,
// 50: the pace is smooth, not the whole second's share at once). Catches a
// Limit checked per batch (150 or 200 moved) or off by one.
func TestRedriveLimitExact(t *testing.T) {
	for _, rate := range []float64{0, 1000} {
		t.Run(fmt.Sprintf("rate=%g", rate), func(t *testing.T) {
			bothSessions(t, func(t *testing.T, batch bool) {
				f := newFakeDLQ(t, 500, func(int) string { return consumer.ReasonExhausted })
				res, err := redrive(t.Context(), f.session(batch), f.publish, RedriveOptions{Limit: 137, Rate: rate})
				require.NoError(t, err)
				require.Equal(t, RedriveResult{Seen: 137, Redriven: 137}, res)
				require.Equal(t, 137, f.published())
				require.Len(t, f.left(), 500-137)
				for _, c := range f.calls {
					require.LessOrEqual(t, len(c), redriveBatchSize(rate))
				}
				f.checkNothingLost(t)
				f.checkNoneDuplicated(t)
			})
		})
	}
}

// TestRedriveCancelLosesNothing cancels a redrive of 400 dead letters two
// ways: while a batch's publish is in flight, and from Progress. Each time
// the redrive returns context.Canceled after the batch in flight was
// confirmed and removed, no publish starts after the cancel, and every
// letter is either confirmed on the source and removed or still
// dead-lettered, never both. Catches publishing or removing under the
// caller's ctx (a cancel between a publish and its removal leaves the
// batch's letters in both places), removing a batch whose publish failed,
// and going on after a cancel.
func TestRedriveCancelLosesNothing(t *testing.T) {
	for _, inPublish := range []bool{true, false} {
		t.Run(fmt.Sprintf("inPublish=%v", inPublish), func(t *testing.T) {
			bothSessions(t, func(t *testing.T, batch bool) {
				f := newFakeDLQ(t, 400, func(int) string { return consumer.ReasonExhausted })
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				calls := 0
				opts := RedriveOptions{}
				if inPublish {
					f.during = func() {
						if calls++; calls == 2 {
							cancel()
						}
					}
				} else {
					opts.Progress = func(p RedriveProgress) {
						if p.Seen == 150 {
							cancel()
						}
					}
				}
				res, err := redrive(ctx, f.session(batch), f.publish, opts)
				require.ErrorIs(t, err, context.Canceled)
				f.checkNothingLost(t)
				f.checkNoneDuplicated(t)
				require.Equal(t, 200, res.Redriven, "the batch in flight is finished")
				require.Len(t, f.left(), 200)
				require.Len(t, f.calls, 2, "no publish after the cancel")
			})
		})
	}
}
