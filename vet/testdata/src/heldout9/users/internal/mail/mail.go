// Package mail sends the user service's e-mails.
package mail

import (
	"fmt"
	"net/smtp"
)

// Mailer sends mail through one SMTP relay.
type Mailer struct {
	Addr string
	From string
	Auth smtp.Auth
}

// Welcome sends the welcome e-mail.
func (m *Mailer) Welcome(to, name string) error {
	body := fmt.Sprintf("To: %s\r\nSubject: Welcome\r\n\r\nHello %s, welcome aboard.\r\n", to, name)
	return smtp.SendMail(m.Addr, m.Auth, m.From, []string{to}, []byte(body))
}
