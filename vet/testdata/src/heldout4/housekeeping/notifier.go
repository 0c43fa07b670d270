package housekeeping

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Notifier tells the housekeeping tablets about a room to clean.
type Notifier interface {
	RoomToClean(ctx context.Context, hotelID, room string, priority int) error
}

type sqsNotifier struct {
	client   *sqs.Client
	queueURL string
}

func (n *sqsNotifier) RoomToClean(ctx context.Context, hotelID, room string, priority int) error {
	b, err := json.Marshal(map[string]any{"hotel": hotelID, "room": room, "priority": priority})
	if err != nil {
		return err
	}
	body := string(b)
	if _, err := n.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &n.queueURL, MessageBody: &body}); err != nil {
		return fmt.Errorf("notify tablets: %w", err)
	}
	return nil
}

type nopNotifier struct{}

func (nopNotifier) RoomToClean(context.Context, string, string, int) error { return nil }
