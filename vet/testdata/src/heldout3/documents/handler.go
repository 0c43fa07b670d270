package documents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type documentUploaded struct {
	DocumentID string `json:"document_id"`
	CustomerID string `json:"customer_id"`
	Bucket     string `json:"bucket"`
	Key        string `json:"key"`
	Kind       string `json:"kind"`
}

// verifier checksums uploaded KYC documents and files them.
type verifier struct {
	s3 *s3.Client

	// lastID and processed feed the /debug page.
	lastID    atomic.Pointer[string]
	processed atomic.Int64
}

func (v *verifier) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("documents: no claim transaction")
	}
	var d documentUploaded
	if err := json.Unmarshal(msg.Body, &d); err != nil {
		return consumer.Permanent(err)
	}
	sum, size, err := v.checksum(ctx, d.Bucket, d.Key)
	if err != nil {
		return err
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := tx.Exec(qctx,
		`INSERT INTO kyc_documents (id, customer_id, kind, sha256, bytes, state) VALUES ($1, $2, $3, $4, $5, 'received')`,
		d.DocumentID, d.CustomerID, d.Kind, sum, size); err != nil {
		return fmt.Errorf("documents: file %s: %w", d.DocumentID, err)
	}
	id := msg.ID
	v.lastID.Store(&id)
	v.processed.Add(1)
	return nil
}

func (v *verifier) checksum(ctx context.Context, bucket, key string) (string, int64, error) {
	out, err := v.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return "", 0, fmt.Errorf("documents: get %s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, out.Body)
	if err != nil {
		return "", 0, fmt.Errorf("documents: read %s/%s: %w", bucket, key, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
