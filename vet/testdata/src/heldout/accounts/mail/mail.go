// Package mail sends transactional e-mail through the company relay.
package mail

import (
	"fmt"
	"net/smtp"
	"strings"
)

// Config is the relay's address and credentials.
type Config struct {
	Addr     string
	Host     string
	From     string
	User     string
	Password string
}

// Sender sends e-mail.
type Sender struct {
	cfg  Config
	auth smtp.Auth
}

// NewSender returns a Sender for cfg.
func NewSender(cfg Config) *Sender {
	return &Sender{cfg: cfg, auth: smtp.PlainAuth("", cfg.User, cfg.Password, cfg.Host)}
}

// Send sends a plain-text message.
func (s *Sender) Send(to, subject, body string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\n\r\n%s", s.cfg.From, to, subject, body)
	return smtp.SendMail(s.cfg.Addr, s.auth, s.cfg.From, []string{to}, []byte(b.String()))
}
