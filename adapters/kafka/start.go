package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/oncely/oncely/adapters/internal/startpos"
)

// anchorStart commits the offsets of Config.Start for group on topic when
// the group has no committed offset there yet, so that the group's first
// member, every later one and every restart resume from the same place.
// Earliest needs no commit: a partition without one starts at its oldest
// record. A group that got members meanwhile (another Source started
// first) refuses the commit; its first member already anchored the start,
// or is consuming from it, and nothing is committed here.
func anchorStart(ctx context.Context, adm *kadm.Client, topic, group, start string) error {
	pos, err := startpos.Parse(start)
	if err != nil || pos.Earliest() {
		return err
	}
	committed, err := hasCommits(ctx, adm, topic, group)
	if err != nil || committed {
		return err
	}
	var listed kadm.ListedOffsets
	if pos.Latest {
		listed, err = adm.ListEndOffsets(ctx, topic)
	} else {
		listed, err = adm.ListOffsetsAfterMilli(ctx, pos.Time.UnixMilli(), topic)
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: listing the start offsets (start %s) of %s: %w", start, topic, err)
	}
	offsets := kadm.Offsets{}
	listed.Each(func(o kadm.ListedOffset) {
		offsets.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
	})
	err = adm.CommitAllOffsets(ctx, group, offsets)
	if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.RebalanceInProgress) {
		return nil // the group has members: not new any more
	}
	if err != nil {
		return fmt.Errorf("kafka: committing the start offsets (start %s) of group %s on %s: %w", start, group, topic, err)
	}
	return nil
}

// hasCommits reports whether group committed an offset on some partition of
// topic.
func hasCommits(ctx context.Context, adm *kadm.Client, topic, group string) (bool, error) {
	fetched, err := adm.FetchOffsetsForTopics(ctx, group, topic)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kafka: fetching the committed offsets of group %s: %w", group, err)
	}
	found := false
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At >= 0 {
			found = true
		}
	})
	return found, nil
}
