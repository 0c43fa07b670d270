// Package lottery issues draw tickets for paid entries, in batches.
package lottery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type entryPaid struct {
	EntryID string `json:"entry_id"`
	Player  string `json:"player"`
	DrawID  string `json:"draw_id"`
	Numbers []int  `json:"numbers"`
}

type ticket struct {
	entryPaid
	Serial string
	Slip   []byte
}

// Issuer turns paid entries into tickets with a printable slip.
type Issuer struct {
	blobs  *s3.Client
	bucket string
}

func (is *Issuer) decode(msgs []*consumer.Message) ([]entryPaid, error) {
	out := make([]entryPaid, 0, len(msgs))
	for _, m := range msgs {
		var e entryPaid
		if err := json.Unmarshal(m.Body, &e); err != nil {
			return nil, consumer.Permanent(fmt.Errorf("entry %s: %w", m.ID, err))
		}
		out = append(out, e)
	}
	return out, nil
}

func (is *Issuer) serial(e entryPaid) string {
	sum := sha256.Sum256([]byte(e.DrawID + "/" + e.EntryID))
	return hex.EncodeToString(sum[:8])
}

func (is *Issuer) render(e entryPaid) ticket {
	t := ticket{entryPaid: e, Serial: is.serial(e)}
	var b bytes.Buffer
	fmt.Fprintf(&b, "DRAW %s\nTICKET %s\nNUMBERS %v\n", e.DrawID, t.Serial, e.Numbers)
	t.Slip = b.Bytes()
	return t
}

func (is *Issuer) keyOf(t ticket) string {
	return fmt.Sprintf("slips/%s/%s.txt", t.DrawID, t.Serial)
}

func (is *Issuer) storeSlip(ctx context.Context, t ticket) error {
	bucket, key := is.bucket, is.keyOf(t)
	_, err := is.blobs.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(t.Slip)}) // want "slip uploaded to S3 inside the transaction"
	return err
}

func (is *Issuer) insert(ctx context.Context, tx pgx.Tx, ts []ticket) error {
	b := &pgx.Batch{}
	for _, t := range ts {
		b.Queue(`INSERT INTO tickets (serial, entry_id, draw_id, player, numbers) VALUES ($1, $2, $3, $4, $5)`,
			t.Serial, t.EntryID, t.DrawID, t.Player, t.Numbers)
	}
	return tx.SendBatch(ctx, b).Close()
}

// IssueBatch is the batch handler.
func (is *Issuer) IssueBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	entries, err := is.decode(msgs)
	if err != nil {
		return err
	}
	ts := make([]ticket, len(entries))
	for i, e := range entries {
		ts[i] = is.render(e)
		if err := is.storeSlip(ctx, ts[i]); err != nil {
			return err
		}
	}
	return is.insert(ctx, tx, ts)
}
