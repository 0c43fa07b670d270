// Package azservicebus is a stub of the Azure Service Bus client.
package azservicebus

import "context"

type Client struct{}
type Sender struct{}
type Message struct{ Body []byte }
type SendMessageOptions struct{}

func (c *Client) NewSender(queue string, opts any) (*Sender, error) { return &Sender{}, nil }
func (s *Sender) SendMessage(ctx context.Context, m *Message, opts *SendMessageOptions) error {
	return nil
}
func (s *Sender) Close(ctx context.Context) error { return nil }
