package redis

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/internal/namestest"
)

// slot is Redis Cluster's hash slot of key: CRC16-CCITT (XMODEM) of its
// hash tag, modulo 16384.
func slot(key string) uint16 {
	tag, _ := HashTag(key)
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// TestSlotOfKnownKeys checks slot against CLUSTER KEYSLOT's answers.
func TestSlotOfKnownKeys(t *testing.T) {
	for key, want := range map[string]uint16{"foo": 12182, "bar": 5061, "{user1000}.following": 3443, "{user1000}.followers": 3443, "{}foo": 9500, "foo{}{bar}": 8363, "foo{{bar}}": 4015} {
		if got := slot(key); got != want {
			t.Errorf("slot(%q) = %d, want %d", key, got, want)
		}
	}
}

// TestSettlementKeysShareSlot: for 20,000 random tagged streams (and the
// fixed "{orders}", "app:{orders}.v1", "{a}}b{c}") and consumer names
// drawn from '.', '_', '{', '}', ':' and letters, the source stream, retry
// stream, delayed set and dead-letter stream — every key one settlement
// script touches — hash to one slot. Catches a derived key that does not
// begin with the stream's name (CROSSSLOT on Redis Cluster).
func TestSettlementKeysShareSlot(t *testing.T) {
	fixed := []namestest.Pair{{Source: "{orders}", Consumer: "ledger"}, {Source: "app:{orders}.v1", Consumer: "a.b"}, {Source: "{a}}b{c}", Consumer: "}{x}"}}
	r := rand.New(rand.NewPCG(1, 2))
	pairs := fixed
	for len(pairs) < 20_000 {
		s := namestest.Name(r, "ab.{}:", 40)
		if _, tagged := HashTag(s); tagged {
			pairs = append(pairs, namestest.Pair{Source: s, Consumer: namestest.Name(r, "ab._{}:", 40)})
		}
	}
	for _, p := range pairs {
		want := slot(p.Source)
		for _, k := range []string{RetryStream(p.Source, p.Consumer), DelayedKey(p.Source, p.Consumer), DeadLetterStream(p.Source, p.Consumer), LiveKey(p.Source, p.Consumer)} {
			if got := slot(k); got != want {
				t.Fatalf("stream %q (slot %d), consumer %q: key %q is in slot %d", p.Source, want, p.Consumer, k, got)
			}
		}
	}
}

// TestHashTag follows Redis Cluster's rule: the first '{', the first '}'
// after it, not empty.
func TestHashTag(t *testing.T) {
	for _, tc := range []struct {
		key, tag string
		tagged   bool
	}{
		{"{orders}", "orders", true},
		{"app:{orders}.ledger.dlq", "orders", true},
		{"orders", "orders", false},
		{"{}orders", "{}orders", false},
		{"a{b", "a{b", false},
		{"a}b{c}", "c", true},
		{"{{x}}", "{x", true},
	} {
		tag, tagged := HashTag(tc.key)
		if tag != tc.tag || tagged != tc.tagged {
			t.Errorf("HashTag(%q) = %q, %v; want %q, %v", tc.key, tag, tagged, tc.tag, tc.tagged)
		}
	}
}

// TestClusterNeedsHashTag: on a cluster client New refuses a stream
// without a hash tag, naming the tagged form, before it sends anything;
// a tagged stream passes validation, and one server takes either.
func TestClusterNeedsHashTag(t *testing.T) {
	cluster := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer func() { _ = cluster.Close() }()
	_, err := New(context.Background(), Config{Client: cluster, Stream: "orders", Consumer: "ledger"})
	if err == nil || !strings.Contains(err.Error(), `field Stream "orders" needs a hash tag on Redis Cluster, such as "{orders}"`) {
		t.Fatalf("New on a cluster with an untagged stream: %v", err)
	}
	if err := (Config{Client: cluster, Stream: "{orders}", Consumer: "ledger"}).withDefaults().validate(); err != nil {
		t.Fatalf("a tagged stream on a cluster: %v", err)
	}
	one := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	defer func() { _ = one.Close() }()
	if err := (Config{Client: one, Stream: "orders", Consumer: "ledger"}).withDefaults().validate(); err != nil {
		t.Fatalf("an untagged stream on one server: %v", err)
	}
}
