// Package mailer sends transactional e-mail through the company relay.
package mailer

import (
	"bytes"
	"fmt"
	"net/smtp"
	"text/template"
)

// Mailer sends templated messages.
type Mailer struct {
	Relay string
	From  string
	Auth  smtp.Auth
	tmpl  *template.Template
}

// New parses the templates once.
func New(relay, from string, auth smtp.Auth) *Mailer {
	return &Mailer{Relay: relay, From: from, Auth: auth, tmpl: template.Must(template.New("delivered").Parse(
		"Subject: Your parcel {{.Tracking}} was delivered\r\n\r\nHello {{.Name}}, your parcel was delivered at {{.Place}}.\r\n"))}
}

// Delivered tells a recipient their parcel arrived.
func (m *Mailer) Delivered(to, name, tracking, place string) error {
	var body bytes.Buffer
	if err := m.tmpl.Execute(&body, map[string]string{"Name": name, "Tracking": tracking, "Place": place}); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	if err := smtp.SendMail(m.Relay, m.Auth, m.From, []string{to}, body.Bytes()); err != nil {
		return fmt.Errorf("send to %s: %w", to, err)
	}
	return nil
}
