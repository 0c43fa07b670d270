package imagemeta

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type variantsReady struct {
	ImageID  string            `json:"image_id"`
	Variants map[string][]byte `json:"variants"` // name → encoded bytes
}

type digest struct {
	name string
	sum  string
	size int
}

// digests hashes every variant on its own goroutine and waits for all of
// them.
func digests(variants map[string][]byte) []digest {
	out := make([]digest, len(variants))
	var wg sync.WaitGroup
	i := 0
	for name, data := range variants {
		wg.Add(1)
		go func(i int, name string, data []byte) {
			defer wg.Done()
			s := sha256.Sum256(data)
			out[i] = digest{name: name, sum: hex.EncodeToString(s[:]), size: len(data)}
		}(i, name, data)
		i++
	}
	wg.Wait()
	return out
}

func onVariantsReady(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var v variantsReady
	if err := json.Unmarshal(msg.Body, &v); err != nil {
		return consumer.Permanent(err)
	}
	for _, d := range digests(v.Variants) {
		if _, err := tx.Exec(ctx,
			`INSERT INTO image_variants (image_id, name, sha256, bytes) VALUES ($1, $2, $3, $4)
			 ON CONFLICT (image_id, name) DO UPDATE SET sha256 = EXCLUDED.sha256, bytes = EXCLUDED.bytes`,
			v.ImageID, d.name, d.sum, d.size); err != nil {
			return fmt.Errorf("imagemeta: variant %s of %s: %w", d.name, v.ImageID, err)
		}
	}
	return nil
}
