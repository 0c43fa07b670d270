package sqs

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// FailureAttribute is the one message attribute that carries the failure
// context (the oncely-* headers, and any header that does not fit in SQS's
// ten message attributes) of a dead-lettered copy, as a JSON object of
// strings. Headers unpacks it.
const FailureAttribute = "oncely-failure"

// Headers turns SQS message attributes into message headers: String and
// Number attributes by value, Binary attributes base64-encoded (standard
// encoding), and the JSON object in FailureAttribute unpacked into headers of
// their own. A FailureAttribute that is not such an object is kept as is.
// The DLQ tooling uses it to show a dead-lettered copy's failure context.
func Headers(attrs map[string]types.MessageAttributeValue) map[string]string {
	h := make(map[string]string, len(attrs))
	for name, v := range attrs {
		if name == FailureAttribute {
			continue
		}
		if s, ok := attributeString(v); ok {
			h[name] = s
		}
	}
	if v, ok := attrs[FailureAttribute]; ok && v.StringValue != nil {
		var packed map[string]string
		if err := json.Unmarshal([]byte(*v.StringValue), &packed); err != nil {
			h[FailureAttribute] = *v.StringValue
		} else {
			maps.Copy(h, packed)
		}
	}
	return h
}

func attributeString(v types.MessageAttributeValue) (string, bool) {
	switch {
	case v.StringValue != nil:
		return *v.StringValue, true
	case v.BinaryValue != nil:
		return base64.StdEncoding.EncodeToString(v.BinaryValue), true
	}
	return "", false
}

// packAttributes returns the message attributes of a copy carrying headers:
// the original attributes whose value headers still holds are kept unchanged
// (idAttr first, then by name) up to nine, and every other header goes into
// one JSON FailureAttribute, so a copy never has more than SQS's ten
// attributes.
func packAttributes(orig map[string]types.MessageAttributeValue, headers map[string]string, idAttr string) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, maxAttributes)
	names := slices.Sorted(maps.Keys(orig))
	slices.SortStableFunc(names, func(a, b string) int {
		switch {
		case a == idAttr && b != idAttr:
			return -1
		case b == idAttr && a != idAttr:
			return 1
		}
		return 0
	})
	for _, name := range names {
		if len(out) == maxAttributes-1 {
			break
		}
		if name == FailureAttribute {
			continue
		}
		v := orig[name]
		if s, ok := attributeString(v); ok && headers[name] == s {
			if _, present := headers[name]; present {
				out[name] = v
			}
		}
	}
	rest := make(map[string]string)
	for name, value := range headers {
		if _, kept := out[name]; !kept {
			rest[name] = value
		}
	}
	if len(rest) > 0 {
		b, _ := json.Marshal(rest) // map[string]string always marshals
		out[FailureAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(string(b))}
	}
	return out
}
