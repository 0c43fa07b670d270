package labels

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var errLocked = errors.New("labels: shipment is being labelled by another worker")

// lockShipment takes a short lock on one shipment so two workers never
// plan its label at once; release it when done.
func lockShipment(ctx context.Context, rdb *redis.Client, shipmentID, owner string) (release func(), err error) {
	key := "lock:label:" + shipmentID
	ok, err := rdb.SetNX(ctx, key, owner, 30*time.Second).Result()
	if err != nil {
		return nil, fmt.Errorf("labels: lock %s: %w", shipmentID, err)
	}
	if !ok {
		return nil, errLocked
	}
	return func() { rdb.Del(context.WithoutCancel(ctx), key) }, nil
}
