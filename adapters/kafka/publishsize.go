package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Messages the producer would refuse alone.
//
// franz-go fails a record larger than the producer's batch limit
// (kgo.ProducerBatchMaxBytes, 1,000,012 bytes by default) or than
// kgo.MaxBufferedBytes at once, with kerr.MessageTooLarge, and produces the
// records around it: a Publish of a key's messages N, N+1 with N too large
// would put N+1 on the broker while N is refused. Client.Publish therefore
// measures every record first, as a one-record batch with every length
// counted at its widest (copySize: never smaller than franz-go's own
// measure, larger by at most about 20 bytes plus 8 per header), and
// refuses the whole call before producing anything when one is over a
// limit.

// oversized returns an error wrapping kerr.MessageTooLarge naming the first
// of recs the producer would refuse alone, or nil.
func (c *Client) oversized(topic string, recs []*kgo.Record, ids []string) error {
	limit := c.batchMax(topic)
	for i, r := range recs {
		size := batchSize(r)
		buffered := int64(len(r.Key) + len(r.Value))
		for _, h := range r.Headers {
			buffered += int64(len(h.Key) + len(h.Value))
		}
		switch {
		case size > int(limit):
			return fmt.Errorf("kafka: publishing to %s: message %d of %d (ID %q) is %d bytes as a record batch, over the producer's limit of %d (ProducerBatchMaxBytes): %w; nothing was sent",
				topic, i+1, len(recs), ids[i], size, limit, kerr.MessageTooLarge)
		case c.bufferedMax > 0 && buffered > c.bufferedMax:
			return fmt.Errorf("kafka: publishing to %s: message %d of %d (ID %q) is %d bytes, over the producer's buffer of %d (MaxBufferedBytes): %w; nothing was sent",
				topic, i+1, len(recs), ids[i], buffered, c.bufferedMax, kerr.MessageTooLarge)
		}
	}
	return nil
}

// batchSize is r's size as a one-record batch, every length at its widest.
func batchSize(r *kgo.Record) int {
	n := batchOverhead + recordOverhead + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += headerOverhead + len(h.Key) + len(h.Value)
	}
	return n
}
