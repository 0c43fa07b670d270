// Package notify is the e-mail adapter of booking.Notifier.
package notify

import (
	"context"
	"fmt"
	"net/smtp"

	"heldout8/concierge/booking"
)

// SMTP sends guest mails through the hotel's relay.
type SMTP struct {
	addr string
	from string
	auth smtp.Auth
}

// NewSMTP returns a notifier sending from from through addr.
func NewSMTP(addr, from string, auth smtp.Auth) *SMTP {
	return &SMTP{addr: addr, from: from, auth: auth}
}

// Confirmed mails the guest a confirmation.
func (s *SMTP) Confirmed(ctx context.Context, r booking.Reservation) error {
	body := fmt.Sprintf("Subject: Your %s reservation\r\n\r\nDear %s, we look forward to seeing you on %s.\r\n",
		r.Kind, r.GuestName, r.At.Format("Mon 2 Jan 15:04"))
	return smtp.SendMail(s.addr, s.auth, s.from, []string{r.Email}, []byte(body))
}
