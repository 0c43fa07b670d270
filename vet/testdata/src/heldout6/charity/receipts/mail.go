// Package receipts sends tax receipts to donors.
package receipts

import (
	"fmt"
	"net/smtp"
)

// Mailer sends receipts through the relay.
type Mailer struct {
	Addr string
	From string
	Auth smtp.Auth
}

// Send mails a tax receipt for a donation.
func (m *Mailer) Send(to, donationID string, amountCts int64) error {
	body := fmt.Sprintf("Subject: Your tax receipt\r\n\r\nThank you for donation %s of %d.%02d.\r\n", donationID, amountCts/100, amountCts%100)
	return smtp.SendMail(m.Addr, m.Auth, m.From, []string{to}, []byte(body))
}
