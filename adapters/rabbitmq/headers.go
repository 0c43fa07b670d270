package rabbitmq

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncely/oncely/consumer"
)

// Headers the broker owns. They are kept out of copies the adapter
// publishes: x-delivery-count belongs to one queue, and x-death must stay an
// array of tables, which a string copy would break.
var brokerHeaders = map[string]bool{
	"x-delivery-count":       true,
	"x-death":                true,
	"x-first-death-exchange": true,
	"x-first-death-queue":    true,
	"x-first-death-reason":   true,
	"x-last-death-exchange":  true,
	"x-last-death-queue":     true,
	"x-last-death-reason":    true,
}

// headerXDeliveryCount is the quorum queue's count of earlier deliveries
// returned unacknowledged (a channel closed: a crash, a lost connection or a
// clean shutdown), absent (or 0) on the first.
const headerXDeliveryCount = "x-delivery-count"

// stringHeaders converts AMQP header values to strings: numbers in decimal,
// booleans as true/false, times in RFC 3339 (UTC), byte slices as their
// bytes, decimals with their scale, arrays and tables as JSON. It never
// panics, whatever the value. x-delivery-count is left out (it is the
// broker's counter, reported in Message.Coordinates).
func stringHeaders(t amqp.Table) map[string]string {
	out := make(map[string]string, len(t))
	for k, v := range t {
		if k == headerXDeliveryCount {
			continue
		}
		out[k] = headerString(v)
	}
	return out
}

// headerString converts one AMQP field value to a string.
func headerString(v any) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = fmt.Sprintf("%T", v)
		}
	}()
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int8:
		return strconv.FormatInt(int64(x), 10)
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint:
		return strconv.FormatUint(uint64(x), 10)
	case uint8:
		return strconv.FormatUint(uint64(x), 10)
	case uint16:
		return strconv.FormatUint(uint64(x), 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case amqp.Decimal:
		return decimalString(x)
	case amqp.Table, []any, map[string]any:
		b, err := json.Marshal(jsonValue(x))
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
	return fmt.Sprint(v)
}

// jsonValue turns nested AMQP values into values encoding/json renders
// readably (bytes as text, decimals and times as strings).
func jsonValue(v any) any {
	switch x := v.(type) {
	case amqp.Table:
		return jsonValue(map[string]any(x))
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = jsonValue(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = jsonValue(e)
		}
		return a
	case []byte, time.Time, amqp.Decimal:
		return headerString(x)
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return headerString(x)
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return headerString(x)
		}
	}
	return v
}

func decimalString(d amqp.Decimal) string {
	neg := d.Value < 0
	digits := strconv.FormatInt(int64(d.Value), 10)
	digits = strings.TrimPrefix(digits, "-")
	scale := int(d.Scale)
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// headerInt reads an integer header of any AMQP integer type (or a decimal
// string); ok is false when absent or not an integer.
func headerInt(t amqp.Table, name string) (n int64, ok bool) {
	switch x := t[name].(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case string:
		v, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return v, err == nil
	}
	return 0, false
}

// attempt derives Message.Attempt from the oncely-attempt header alone (at
// least 1). x-delivery-count is not an attempt count: the broker raises it
// whenever a channel closes with the message unacknowledged, also on a clean
// shutdown that returns prefetched deliveries no handler ever saw. It is
// evidence of crashes and closes, reported in Message.Coordinates.
func attempt(h map[string]string) int {
	return max(consumer.AttemptFromHeaders(h), 1)
}

// messageID is the message_id property, else the message-id header.
func messageID(d *amqp.Delivery, h map[string]string) string {
	if d.MessageId != "" {
		return d.MessageId
	}
	return h[consumer.HeaderMessageID]
}

// publishHeaders turns string headers into an AMQP table, leaving out the
// broker's own headers.
func publishHeaders(h map[string]string) amqp.Table {
	t := make(amqp.Table, len(h))
	for k, v := range h {
		if brokerHeaders[k] {
			continue
		}
		t[k] = v
	}
	return t
}
