// Package notify sends the customer-facing e-mails of the onboarding flow.
package notify

import (
	"context"
	"fmt"
	"net/smtp"
	"strings"
)

// Mailer sends onboarding e-mails.
type Mailer interface {
	SendWelcome(ctx context.Context, to, name string) error
}

// SMTP sends through a relay.
type SMTP struct {
	Addr string
	From string
	Auth smtp.Auth
}

// NewSMTP returns an SMTP mailer for the relay at addr.
func NewSMTP(addr, from string, auth smtp.Auth) *SMTP {
	return &SMTP{Addr: addr, From: from, Auth: auth}
}

// SendWelcome sends the welcome e-mail.
func (m *SMTP) SendWelcome(ctx context.Context, to, name string) error {
	body := strings.Join([]string{
		"From: " + m.From,
		"To: " + to,
		"Subject: Welcome aboard, " + name,
		"",
		"Your account is ready.",
	}, "\r\n")
	if err := smtp.SendMail(m.Addr, m.Auth, m.From, []string{to}, []byte(body)); err != nil {
		return fmt.Errorf("notify: welcome to %s: %w", to, err)
	}
	return nil
}
