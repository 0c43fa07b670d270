package pricing

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"heldout8/pricing/catalog"
)

// publishingPrices decorates a PriceRepository: every saved price is also
// announced on the price-changes topic for the storefront caches.
type publishingPrices struct {
	next  catalog.PriceRepository
	kafka *kgo.Client
	topic string
}

func (p *publishingPrices) Save(ctx context.Context, price catalog.Price) error {
	if err := p.next.Save(ctx, price); err != nil {
		return err
	}
	value, err := json.Marshal(price)
	if err != nil {
		return err
	}
	for _, res := range p.kafka.ProduceSync(ctx, &kgo.Record{Topic: p.topic, Value: value}) { // want "price change produced to Kafka inside the transaction"
		if res.Err != nil {
			return fmt.Errorf("announce %s/%s: %w", price.SKU, price.Market, res.Err)
		}
	}
	return nil
}
