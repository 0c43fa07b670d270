package consumer

import "strings"

// UntrustedHeaderPrefix starts the names under which DistrustHeaders moves
// a producer's "oncely-" headers: "oncely-attempt" becomes
// "untrusted-oncely-attempt". The values stay readable for forensics; no
// part of oncely reads them.
const UntrustedHeaderPrefix = "untrusted-"

// DistrustHeaders moves every header of h named with HeaderPrefix
// ("oncely-") to UntrustedHeaderPrefix+name, in place, and reports whether
// it moved any. A header already under the untrusted name is replaced.
//
// Adapters call it on a message's first arrival: a message that is not one
// of oncely's own retry copies, however the broker tells them apart (each
// adapter's doc says how). A producer therefore cannot set the attempt
// count (Message.Attempt starts at 1), the retry due time, or the failure
// context a dead letter shows (original source, partition, offset, error,
// reason): FailureHeaders writes those from the message's real coordinates.
//
// For adapter authors (see the package doc).
func DistrustHeaders(h map[string]string) bool {
	moved := false
	for k, v := range h {
		if strings.HasPrefix(k, HeaderPrefix) {
			delete(h, k)
			h[UntrustedHeaderPrefix+k] = v
			moved = true
		}
	}
	return moved
}
