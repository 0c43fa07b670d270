// Package sqs is a stub of github.com/aws/aws-sdk-go-v2/service/sqs.
package sqs

import "context"

type Client struct{}
type Options struct{}

type SendMessageInput struct {
	QueueUrl    *string
	MessageBody *string
}
type SendMessageOutput struct{}
type ReceiveMessageInput struct{ QueueUrl *string }
type ReceiveMessageOutput struct{}
type GetQueueUrlInput struct{ QueueName *string }
type GetQueueUrlOutput struct{ QueueUrl *string }

func (c *Client) SendMessage(ctx context.Context, in *SendMessageInput, opts ...func(*Options)) (*SendMessageOutput, error) {
	return nil, nil
}
func (c *Client) ReceiveMessage(ctx context.Context, in *ReceiveMessageInput, opts ...func(*Options)) (*ReceiveMessageOutput, error) {
	return nil, nil
}
func (c *Client) GetQueueUrl(ctx context.Context, in *GetQueueUrlInput, opts ...func(*Options)) (*GetQueueUrlOutput, error) {
	return nil, nil
}
