package reviews

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"heldout3/reviews/moderation"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type reviewSubmitted struct {
	ReviewID  string `json:"review_id"`
	ProductID string `json:"product_id"`
	AuthorID  string `json:"author_id"`
	Stars     int    `json:"stars"`
	Text      string `json:"text"`
}

type submissions struct {
	mod *moderation.Client
}

func (s *submissions) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("reviews: no claim transaction")
	}
	var r reviewSubmitted
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	v, err := s.mod.Check(ctx, r.Text)
	if err != nil {
		return err
	}
	state := "published"
	if !v.Allowed {
		state = "rejected"
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO reviews (id, product_id, author_id, stars, body, state, labels) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		r.ReviewID, r.ProductID, r.AuthorID, r.Stars, r.Text, state, strings.Join(v.Labels, ",")); err != nil {
		return fmt.Errorf("reviews: insert %s: %w", r.ReviewID, err)
	}
	if state != "published" {
		return nil
	}
	_, err = tx.Exec(ctx, `UPDATE product_ratings SET n = n + 1, stars_total = stars_total + $2 WHERE product_id = $1`, r.ProductID, r.Stars)
	return err
}
