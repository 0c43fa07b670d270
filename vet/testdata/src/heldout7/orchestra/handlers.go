package orchestra

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type roomBooking struct {
	Room    string    `json:"room"`
	Section string    `json:"section"`
	From    time.Time `json:"from"`
	Until   time.Time `json:"until"`
}

func bookRoom(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var b roomBooking
	if err := json.Unmarshal(msg.Body, &b); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO room_bookings (room, section, during) VALUES ($1, $2, tstzrange($3, $4))`,
		b.Room, b.Section, b.From, b.Until); err != nil {
		return fmt.Errorf("room %s taken: %w", b.Room, consumer.Permanent(err))
	}
	return nil
}

type practiceSession struct {
	Member  string `json:"member"`
	Minutes int    `json:"minutes"`
}

// practiceLog adds practice minutes to the member's weekly chart.
type practiceLog struct {
	pool *pgxpool.Pool
}

func (p *practiceLog) Handle(ctx context.Context, msg *consumer.Message) error {
	var s practiceSession
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	_, err := p.pool.Exec(ctx, `UPDATE practice_chart SET minutes = minutes + $2 WHERE member = $1 AND week = date_trunc('week', now())`,
		s.Member, s.Minutes)
	return err
}
