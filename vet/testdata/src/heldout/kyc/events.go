package kyc

import (
	"encoding/json"

	"github.com/IBM/sarama"
)

// publisher announces verification results to other services.
type publisher interface {
	Publish(topic, key string, v any) error
}

type saramaPublisher struct {
	producer sarama.SyncProducer
}

func (p saramaPublisher) Publish(topic, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, _, err = p.producer.SendMessage(&sarama.ProducerMessage{
		Topic: topic,
		Key:   sarama.StringEncoder(key),
		Value: sarama.StringEncoder(b),
	})
	return err
}
