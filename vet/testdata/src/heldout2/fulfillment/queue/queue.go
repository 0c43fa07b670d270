// Package queue wraps the SQS queue that the warehouse robots read.
package queue

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Queue sends pick jobs.
type Queue struct {
	client *sqs.Client
	url    string
}

// New returns a Queue for the queue at url.
func New(client *sqs.Client, url string) *Queue { return &Queue{client: client, url: url} }

// Enqueue sends one pick job.
func (q *Queue) Enqueue(ctx context.Context, body string) error {
	if _, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q.url, MessageBody: &body}); err != nil {
		return fmt.Errorf("enqueue pick job: %w", err)
	}
	return nil
}
