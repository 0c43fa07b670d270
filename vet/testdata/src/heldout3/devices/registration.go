package devices

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type deviceRegistered struct {
	DeviceID string `json:"device_id"`
	TenantID string `json:"tenant_id"`
	Model    string `json:"model"`
	Firmware string `json:"firmware"`
}

type provisionRequest struct {
	DeviceID string `json:"device_id"`
	Profile  string `json:"profile"`
}

// registrationHandler records new devices and asks the provisioning service
// to push their configuration profile.
type registrationHandler struct {
	queue        *sqs.Client
	provisionURL string
	log          *slog.Logger
}

func (h *registrationHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("devices: no claim transaction")
	}
	var d deviceRegistered
	if err := json.Unmarshal(msg.Body, &d); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO devices (id, tenant_id, model, firmware, state) VALUES ($1, $2, $3, $4, 'provisioning')
		 ON CONFLICT (id) DO UPDATE SET firmware = EXCLUDED.firmware`,
		d.DeviceID, d.TenantID, d.Model, d.Firmware); err != nil {
		return fmt.Errorf("devices: upsert %s: %w", d.DeviceID, err)
	}
	return h.requestProvisioning(ctx, d) // want "provisioning request sent to SQS by the helper inside the transactional handler; use the outbox"
}

func (h *registrationHandler) requestProvisioning(ctx context.Context, d deviceRegistered) error {
	body, err := json.Marshal(provisionRequest{DeviceID: d.DeviceID, Profile: profileFor(d.Model)})
	if err != nil {
		return err
	}
	s := string(body)
	if _, err := h.queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &h.provisionURL, MessageBody: &s}); err != nil {
		return fmt.Errorf("devices: request provisioning of %s: %w", d.DeviceID, err)
	}
	h.log.DebugContext(ctx, "provisioning requested", "device", d.DeviceID)
	return nil
}

func profileFor(model string) string {
	switch model {
	case "gw-200", "gw-300":
		return "gateway"
	default:
		return "sensor"
	}
}
