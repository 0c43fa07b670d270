// Package sarama is a stub of github.com/IBM/sarama.
package sarama

type Encoder interface{ Encode() ([]byte, error) }

type StringEncoder string

func (s StringEncoder) Encode() ([]byte, error) { return []byte(s), nil }

type ProducerMessage struct {
	Topic string
	Key   Encoder
	Value Encoder
}

type SyncProducer interface {
	SendMessage(msg *ProducerMessage) (partition int32, offset int64, err error)
	Close() error
}
