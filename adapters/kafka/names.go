package kafka

import (
	"fmt"
	"strings"
	"time"

	"github.com/oncely/oncely/internal/names"
	"github.com/oncely/oncely/retry"
)

// maxTopicName is Kafka's limit on a topic name's length.
const maxTopicName = 249

// RetryTopic names the retry topic of topic and group for a delay tier:
// "<topic>.<group>.retry.<tier>", the tier formatted by retry.Name ("10s"),
// for a group of letters, digits and '-'; any other group is escaped (see
// pairPrefix). No two (topic, group) pairs share a retry topic.
func RetryTopic(topic, group string, tier time.Duration) string {
	return pairPrefix(topic, group) + "retry." + retry.Name(tier)
}

// DeadLetterTopic names the dead-letter topic of topic and group:
// "<topic>.<group>.dlq" for a group of letters, digits and '-'; any other
// group is escaped (see pairPrefix). No two (topic, group) pairs share a
// dead-letter topic.
func DeadLetterTopic(topic, group string) string {
	return pairPrefix(topic, group) + "dlq"
}

// DeadLetterTopicGroup is the inverse of DeadLetterTopic for a known topic:
// the group whose dead-letter topic of topic is name, and false when name
// is no dead-letter topic of topic.
func DeadLetterTopicGroup(topic, name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, topic+".")
	if !ok {
		return "", false
	}
	group, ok := strings.CutSuffix(rest, ".dlq")
	if !ok || group == "" {
		return "", false
	}
	if escaped, ok := strings.CutSuffix(group, "."); ok {
		var err error
		if group, err = names.Unescape(escaped, '-'); err != nil {
			return "", false
		}
	}
	if DeadLetterTopic(topic, group) != name {
		return "", false
	}
	return group, true
}

// retryTopicPrefix begins every retry topic of topic and group.
func retryTopicPrefix(topic, group string) string { return pairPrefix(topic, group) + "retry." }

// pairPrefix begins the derived topics of (topic, group): "<topic>.<group>."
// for a plain group, else "<topic>.<escaped group>.." with every byte other
// than a letter or digit written as '-' and two hex digits ("a.b" is
// "a-2eb"). The part before the kind is empty only for an escaped group,
// and neither form of the group holds '.' or '_', so the topic and group
// can be read back from the name even with '.' and '_' taken as one
// character, as Kafka takes them ("a.b_c" and "a_b.c" collide).
func pairPrefix(topic, group string) string {
	if plainGroup(group) {
		return topic + "." + group + "."
	}
	return topic + "." + names.Escape(group, '-', names.Alnum) + ".."
}

// plainGroup reports whether group keeps its derived topic names of earlier
// versions: letters, digits and '-' only.
func plainGroup(group string) bool {
	for i := 0; i < len(group); i++ {
		if !names.Alnum(group[i]) && group[i] != '-' {
			return false
		}
	}
	return true
}

// checkTopicNames reports a topic or derived topic that Kafka would refuse:
// over 249 characters, or with a character other than letters, digits,
// '.', '_' and '-'; and tiers whose retry topics would coincide.
func checkTopicNames(topic, group string, tiers retry.Tiers, retryTopics bool) []error {
	all := []string{topic, DeadLetterTopic(topic, group)}
	byName := map[string]time.Duration{}
	if retryTopics {
		for _, d := range tiers {
			n := RetryTopic(topic, group, d)
			if other, ok := byName[n]; ok {
				return []error{fmt.Errorf("retry tiers %s and %s share the topic %q; use tiers of whole milliseconds", other, d, n)}
			}
			byName[n] = d
			all = append(all, n)
		}
	}
	var errs []error
	for _, n := range all {
		switch {
		case len(n) > maxTopicName:
			errs = append(errs, fmt.Errorf("topic name %q is %d characters, over Kafka's %d; shorten Topic or Group", n, len(n), maxTopicName))
		case strings.IndexFunc(n, func(r rune) bool { return r > 0x7f || !names.Alnum(byte(r)) && r != '.' && r != '_' && r != '-' }) >= 0:
			errs = append(errs, fmt.Errorf("topic name %q has characters Kafka refuses (it allows letters, digits, '.', '_' and '-')", n))
		}
	}
	return errs
}
