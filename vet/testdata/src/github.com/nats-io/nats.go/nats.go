// Package nats is a stub of github.com/nats-io/nats.go.
package nats

type Conn struct{}
type Msg struct {
	Subject string
	Data    []byte
}
type PubAck struct{}
type PubOpt interface{}

func Connect(url string) (*Conn, error) { return &Conn{}, nil }

func (c *Conn) Publish(subj string, data []byte) error { return nil }
func (c *Conn) PublishMsg(m *Msg) error                { return nil }
func (c *Conn) Flush() error                           { return nil }
func (c *Conn) JetStream() (JetStreamContext, error)   { return nil, nil }

type JetStreamContext interface {
	Publish(subj string, data []byte, opts ...PubOpt) (*PubAck, error)
	PublishMsg(m *Msg, opts ...PubOpt) (*PubAck, error)
}
