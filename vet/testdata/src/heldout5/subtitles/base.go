// Package subtitles keeps subtitle tracks for streaming titles.
package subtitles

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
)

// base holds what every subtitle handler shares.
type base struct {
	s3     *s3.Client
	bucket string
}

func (b *base) fetchTrack(ctx context.Context, key string) ([]byte, error) {
	out, err := b.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

func (b *base) touchTitle(ctx context.Context, tx pgx.Tx, titleID string) error {
	_, err := tx.Exec(ctx, `UPDATE titles SET subtitles_updated_at = now() WHERE id = $1`, titleID)
	return err
}
