package harbor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type berthBooking struct {
	MMSI   string    `json:"mmsi"`
	Berth  string    `json:"berth"`
	From   time.Time `json:"from"`
	Until  time.Time `json:"until"`
	Agent  string    `json:"agent"`
	FeeEUR int64     `json:"fee_eur"`
}

type berthDesk struct {
	log *slog.Logger
}

func (d *berthDesk) book(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var b berthBooking
	if err := json.Unmarshal(msg.Body, &b); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO berth_bookings (mmsi, berth, during) VALUES ($1, $2, tstzrange($3, $4))`,
		b.MMSI, b.Berth, b.From, b.Until); err != nil {
		return fmt.Errorf("berth %s: %w", b.Berth, err)
	}
	_, err := tx.Exec(ctx, `UPDATE agents SET owed_eur = owed_eur + $2 WHERE id = $1`, b.Agent, b.FeeEUR)
	d.log.Info("berth booked", "mmsi", b.MMSI, "berth", b.Berth)
	return err
}
