package rabbitmq

import (
	"context"
	"math"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

func TestHeaderString(t *testing.T) {
	ts := time.Date(2026, 11, 30, 4, 0, 0, 0, time.FixedZone("X", 3600))
	for _, tc := range []struct {
		in   any
		want string
	}{
		{nil, ""},
		{"s", "s"},
		{[]byte("bytes"), "bytes"},
		{true, "true"},
		{int8(-8), "-8"}, {int16(-16), "-16"}, {int32(-32), "-32"}, {int64(-64), "-64"}, {7, "7"},
		{uint8(8), "8"}, {uint16(16), "16"}, {uint32(32), "32"}, {uint64(math.MaxUint64), "18446744073709551615"},
		{float32(1.5), "1.5"}, {2.25, "2.25"}, {math.Inf(1), "+Inf"},
		{ts, "2026-11-30T03:00:00Z"},
		{amqp.Decimal{Scale: 2, Value: 12345}, "123.45"},
		{amqp.Decimal{Scale: 3, Value: -5}, "-0.005"},
		{amqp.Decimal{Scale: 0, Value: 42}, "42"},
		{[]any{int32(1), "a", []byte("b")}, `[1,"a","b"]`},
		{amqp.Table{"n": int64(1), "nan": math.NaN()}, `{"n":1,"nan":"NaN"}`},
		{struct{ A int }{1}, "{1}"},
	} {
		if got := headerString(tc.in); got != tc.want {
			t.Errorf("headerString(%#v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAttemptAndID(t *testing.T) {
	for _, tc := range []struct {
		table amqp.Table
		want  int
	}{
		{amqp.Table{}, 1},
		{amqp.Table{"oncely-attempt": "3"}, 3},
		{amqp.Table{"x-delivery-count": int64(0)}, 1},
		{amqp.Table{"x-delivery-count": int64(4)}, 1}, // returns on closes are not attempts
		{amqp.Table{"x-delivery-count": int32(1), "oncely-attempt": "3"}, 3},
		{amqp.Table{"x-delivery-count": int64(5), "oncely-attempt": int32(2)}, 2},
		{amqp.Table{"oncely-attempt": "garbage", "x-delivery-count": "x"}, 1},
	} {
		if got := attempt(stringHeaders(tc.table)); got != tc.want {
			t.Errorf("attempt(%v) = %d, want %d", tc.table, got, tc.want)
		}
	}
	h := stringHeaders(amqp.Table{"message-id": "from-header", "x-delivery-count": int64(2)})
	if _, ok := h["x-delivery-count"]; ok {
		t.Error("x-delivery-count copied into Headers")
	}
	if id := messageID(&amqp.Delivery{}, h); id != "from-header" {
		t.Errorf("ID %q, want the header's", id)
	}
	if id := messageID(&amqp.Delivery{MessageId: "prop"}, h); id != "prop" {
		t.Errorf("ID %q, want the property's", id)
	}
	out := publishHeaders(map[string]string{"a": "1", "x-death": "[]", "x-delivery-count": "3", "x-first-death-reason": "expired"})
	if len(out) != 1 || out["a"] != "1" {
		t.Errorf("publishHeaders kept broker headers: %v", out)
	}
}

// TestOddHeaderTypes publishes a message with headers of every AMQP type
// and its ID only in the message-id header: the Source converts them all to
// strings, and a retried copy carries them as strings. It is published as
// oncely's own copies are (user_id the consumer's login), so its attempt
// header counts.
func TestOddHeaderTypes(t *testing.T) {
	queue := uniqueName("headers")
	src := newSource(t, Config{Queue: queue, Consumer: "ledger"})
	ch, closeConn := openChannel(t)
	defer closeConn()
	ts := time.Unix(1_700_000_000, 0)
	err := ch.Publish("", queue, false, false, amqp.Publishing{Body: []byte("b"), UserId: src.login, Headers: amqp.Table{
		"message-id": "hdr-id", "message-key": []byte("acct-1"), "i32": int32(-7), "i64": int64(1 << 40), "u8": uint8(200),
		"bool": true, "f64": 0.5, "time": ts, "dec": amqp.Decimal{Scale: 1, Value: 15}, "arr": []any{"x", int32(2)},
		"tbl": amqp.Table{"k": "v"}, "void": nil, "oncely-attempt": int64(2),
	}})
	if err != nil {
		t.Fatal(err)
	}
	d := adaptertest.ReceiveN(t, src, 1, 20*time.Second)[0]
	m := d.Message()
	want := map[string]string{"message-id": "hdr-id", "message-key": "acct-1", "i32": "-7", "i64": "1099511627776", "u8": "200",
		"bool": "true", "f64": "0.5", "time": ts.UTC().Format(time.RFC3339Nano), "dec": "1.5", "arr": `["x",2]`, "tbl": `{"k":"v"}`, "void": "", "oncely-attempt": "2"}
	for k, v := range want {
		if m.Headers[k] != v {
			t.Errorf("header %s = %q, want %q", k, m.Headers[k], v)
		}
	}
	if m.ID != "hdr-id" || m.Key != "acct-1" || m.Attempt != 2 {
		t.Errorf("ID %q key %q attempt %d", m.ID, m.Key, m.Attempt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := d.Retry(ctx, 100*time.Millisecond, consumer.FailureHeaders(m, consumer.Failure{Consumer: "ledger", NextAttempt: 3})); err != nil {
		t.Fatal(err)
	}
	m2 := adaptertest.ReceiveN(t, src, 1, 20*time.Second)[0].Message()
	for k, v := range want {
		if k == "oncely-attempt" {
			v = "3"
		}
		if m2.Headers[k] != v {
			t.Errorf("retried copy: header %s = %q, want %q", k, m2.Headers[k], v)
		}
	}
	if m2.ID != "hdr-id" || m2.Attempt != 3 {
		t.Errorf("retried copy: ID %q attempt %d", m2.ID, m2.Attempt)
	}
}
