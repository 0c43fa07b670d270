package mailer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/smtp"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

// Sender delivers queued receipts by SMTP. A receipt may be mailed twice
// after a crash; customers tolerate that, so its consumer opts out.
type Sender struct {
	relay string
}

// NewSender returns a Sender using the relay at addr.
func NewSender(addr string) *Sender { return &Sender{relay: addr} }

func (s *Sender) deliver(ctx context.Context, msg *consumer.Message) error {
	var r receipt
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	body := fmt.Sprintf("Subject: Your receipt\r\n\r\nOrder %s: %d.%02d", r.OrderID, r.Cents/100, r.Cents%100)
	return smtp.SendMail(s.relay, nil, "receipts@example.com", []string{r.To}, []byte(body))
}

// Drain mails every receipt the outbox relay published.
func (s *Sender) Drain(ctx context.Context, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "mail.receipts", "receipt-mailer")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, consumer.HandlerFunc(s.deliver), consumer.Config{
		Name:       "receipt-mailer",
		Duplicates: consumer.AllowDuplicates("SMTP cannot join a transaction; a second receipt after a crash is acceptable"),
	})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
