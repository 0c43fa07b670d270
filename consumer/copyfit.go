package consumer

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Headers set on a dead-letter copy whose body was removed to fit the
// broker's size limit (see FitCopy). The failure context is kept.
const (
	// HeaderBodyRemovedSize is the removed body's size in bytes.
	HeaderBodyRemovedSize = "oncely-body-removed-size"
	// HeaderBodyRemovedSHA256 is the hex SHA-256 of the removed body, to
	// find the original in the producer's records.
	HeaderBodyRemovedSHA256 = "oncely-body-removed-sha256"
	// HeaderHeadersRemoved lists the message's own headers removed from a
	// dead-letter copy that did not fit without its body either: a JSON
	// object of each removed header's name and its value's size in bytes.
	HeaderHeadersRemoved = "oncely-headers-removed"
)

// fitErrorBytes is the error header's size once trimmed to fit.
const fitErrorBytes = 512

// CopySize measures a copy as a broker counts it against its limit.
//
// For adapter authors (see the package doc).
type CopySize func(body []byte, headers map[string]string) int

// Fitted is a copy made to fit a broker's size limit by FitCopy.
//
// For adapter authors (see the package doc).
type Fitted struct {
	Body    []byte
	Headers map[string]string
	// Trimmed reports that failure headers were shortened or dropped.
	Trimmed bool
	// BodyRemoved reports that the body was replaced by the
	// HeaderBodyRemovedSize and HeaderBodyRemovedSHA256 markers.
	BodyRemoved bool
	// HeadersRemoved names the message's own headers removed and listed
	// in the HeaderHeadersRemoved header, largest first.
	HeadersRemoved []string
}

// FitCopy makes a retry or dead-letter copy fit within limit bytes as size
// measures it, for adapters whose broker states a size limit (limit <= 0:
// none). It changes as little as it can, in this order:
//
//  1. the copy as it is, when it fits;
//  2. without HeaderStack, then with HeaderError cut to 512 bytes;
//  3. for a dead-letter copy only (dead), with an empty body and the
//     HeaderBodyRemovedSize and HeaderBodyRemovedSHA256 markers, keeping
//     every other header, when that makes it smaller: a dead letter that
//     says what failed and which body it was beats a copy the broker
//     refuses forever;
//  4. for a dead-letter copy whose own headers (the producer's) are too
//     large even so, without them, largest first, each listed by name and
//     size in the HeaderHeadersRemoved header, until it fits. Never removed: the
//     oncely failure context (every "oncely-" header and HeaderMessageID),
//     the trace context (HeaderTraceParent, HeaderTraceState) and the
//     headers named in keep (the adapter's ID and key headers, which a
//     redrive reads).
//
// A retry copy never loses its body or a header of the message. When nothing
// fits, FitCopy returns an error wrapping ErrCopyRefused: only when what is
// never removed is over the limit by itself. body and headers are not
// modified.
//
// For adapter authors (see the package doc).
func FitCopy(body []byte, headers map[string]string, limit int, size CopySize, dead bool, keep ...string) (Fitted, error) {
	f := Fitted{Body: body, Headers: headers}
	if limit <= 0 || size(body, headers) <= limit {
		return f, nil
	}
	f.Headers = maps.Clone(headers)
	f.Trimmed = true
	delete(f.Headers, HeaderStack)
	if size(f.Body, f.Headers) <= limit {
		return f, nil
	}
	if e, ok := f.Headers[HeaderError]; ok {
		f.Headers[HeaderError] = truncate(e, fitErrorBytes)
		if size(f.Body, f.Headers) <= limit {
			return f, nil
		}
	}
	if !dead {
		return Fitted{}, refusedCopy(size(f.Body, f.Headers), limit)
	}
	if len(body) > 0 {
		removed := maps.Clone(f.Headers)
		sum := sha256.Sum256(body)
		removed[HeaderBodyRemovedSize] = strconv.Itoa(len(body))
		removed[HeaderBodyRemovedSHA256] = hex.EncodeToString(sum[:])
		if size(nil, removed) < size(f.Body, f.Headers) {
			f.Body, f.Headers, f.BodyRemoved = nil, removed, true
			if size(f.Body, f.Headers) <= limit {
				return f, nil
			}
		}
	}
	return f.withoutOwnHeaders(limit, size, keep)
}

// withoutOwnHeaders is FitCopy's last step: it removes the message's own
// headers, largest first, until the copy fits.
func (f Fitted) withoutOwnHeaders(limit int, size CopySize, keep []string) (Fitted, error) {
	var own []string
	for k := range f.Headers {
		if !strings.HasPrefix(k, "oncely-") && k != HeaderMessageID && k != HeaderTraceParent && k != HeaderTraceState && !slices.Contains(keep, k) {
			own = append(own, k)
		}
	}
	slices.SortFunc(own, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(f.Headers[b]), len(f.Headers[a])), cmp.Compare(a, b))
	})
	sizes := make(map[string]int, len(own))
	if earlier, ok := f.Headers[HeaderHeadersRemoved]; ok {
		// Fitted before, to another limit (an adapter with two): keep
		// the list.
		_ = json.Unmarshal([]byte(earlier), &sizes)
	}
	for _, k := range own {
		sizes[k] = len(f.Headers[k])
		delete(f.Headers, k)
		f.HeadersRemoved = append(f.HeadersRemoved, k)
		list, _ := json.Marshal(sizes) // a map of strings to ints always encodes
		f.Headers[HeaderHeadersRemoved] = string(list)
		if size(f.Body, f.Headers) <= limit {
			return f, nil
		}
	}
	return Fitted{}, refusedCopy(size(f.Body, f.Headers), limit)
}

func refusedCopy(n, limit int) error {
	return fmt.Errorf("%w: %d bytes over a limit of %d even after trimming", ErrCopyRefused, n, limit)
}

// CopyTrimmer is implemented by deliveries whose adapter can trim a retry or
// dead-letter copy to fit the broker's limit (see FitCopy). After a
// successful Retry or DeadLetter the runtime asks it, to count and report
// trimmed copies (Event.Trimmed).
//
// For adapter authors (see the package doc).
type CopyTrimmer interface {
	// CopyTrimmed reports whether the copy last published for this delivery
	// was trimmed (failure headers shortened or the body removed).
	CopyTrimmed() bool
}
