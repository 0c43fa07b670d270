package quarry

import (
	"fmt"
	"net/smtp"
	"strings"
)

// Notifier tells neighbours about an upcoming blast.
type Notifier interface {
	Notify(to []string, subject, body string) error
}

// smtpNotifier sends notices through the company's mail relay.
type smtpNotifier struct {
	addr string
	from string
	auth smtp.Auth
}

func (n smtpNotifier) Notify(to []string, subject, body string) error {
	msg := "From: " + n.from + "\r\nTo: " + strings.Join(to, ", ") + "\r\nSubject: " + subject + "\r\n\r\n" + body
	if err := smtp.SendMail(n.addr, n.auth, n.from, to, []byte(msg)); err != nil {
		return fmt.Errorf("notice: %w", err)
	}
	return nil
}

// logNotifier drops notices; it is the default until a relay is set.
type logNotifier struct{}

func (logNotifier) Notify(to []string, subject, body string) error { return nil }
