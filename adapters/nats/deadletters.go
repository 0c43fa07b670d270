package nats

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/consumer"
)

// DeadLetters reads the dead-letter stream of one source and consumer by
// sequence, without a consumer: a snapshot of the sequences it held when
// opened, so letters dead-lettered meanwhile are not read.
type DeadLetters struct {
	s           jetstream.Stream // nil when the stream does not exist
	keyHeader   string
	next, last  uint64
	total       int
	deadSubject string
}

// StoredLetter is one dead letter with its stream sequence.
type StoredLetter struct {
	Seq     uint64
	Message *consumer.Message
}

// OpenDeadLetters opens the dead-letter stream of source and consumerName
// (DeadLetterSubject). A missing stream reads as empty.
func OpenDeadLetters(ctx context.Context, js jetstream.JetStream, source, consumerName, keyHeader string) (*DeadLetters, error) {
	if keyHeader == "" {
		keyHeader = KeyHeaderDefault
	}
	subject := DeadLetterSubject(source, consumerName)
	d := &DeadLetters{keyHeader: keyHeader, deadSubject: subject}
	s, err := js.Stream(ctx, StreamName(subject))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("nats: dead letters: %w", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("nats: dead letters: %w", err)
	}
	d.s, d.total = s, int(info.State.Msgs)
	if info.State.Msgs > 0 {
		d.next, d.last = info.State.FirstSeq, info.State.LastSeq
	}
	return d, nil
}

// Total is the stream's depth when opened.
func (d *DeadLetters) Total() int { return d.total }

// Next returns up to n letters after those returned before; none when the
// snapshot is read.
func (d *DeadLetters) Next(ctx context.Context, n int) ([]StoredLetter, error) {
	var out []StoredLetter
	for d.s != nil && d.next != 0 && d.next <= d.last && len(out) < n {
		seq := d.next
		d.next++
		raw, err := d.s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // removed
		}
		if err != nil {
			return out, fmt.Errorf("nats: reading dead letter %d of %s: %w", seq, StreamName(d.deadSubject), err)
		}
		h := stringHeaders(raw.Header)
		msg := &consumer.Message{
			ID:        h[consumer.HeaderMessageID],
			Key:       h[d.keyHeader],
			Body:      raw.Data,
			Headers:   h,
			Source:    raw.Subject,
			Attempt:   max(1, consumer.AttemptFromHeaders(h)),
			Partition: -1,
			Offset:    int64(seq),
			Timestamp: raw.Time,
		}
		out = append(out, StoredLetter{Seq: seq, Message: msg})
	}
	return out, nil
}

// Remove deletes the letter at seq.
func (d *DeadLetters) Remove(ctx context.Context, seq uint64) error {
	if err := d.s.DeleteMsg(ctx, seq); err != nil {
		return fmt.Errorf("nats: removing dead letter %d: %w", seq, err)
	}
	return nil
}
