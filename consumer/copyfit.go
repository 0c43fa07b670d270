package consumer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
)

// Headers set on a dead-letter copy whose body was removed to fit the
// broker's size limit (see FitCopy). The failure context is kept.
const (
	// HeaderBodyRemovedSize is the removed body's size in bytes.
	HeaderBodyRemovedSize = "oncely-body-removed-size"
	// HeaderBodyRemovedSHA256 is the hex SHA-256 of the removed body, to
	// find the original in the producer's records.
	HeaderBodyRemovedSHA256 = "oncely-body-removed-sha256"
)

// fitErrorBytes is the error header's size once trimmed to fit.
const fitErrorBytes = 512

// CopySize measures a copy as a broker counts it against its limit.
type CopySize func(body []byte, headers map[string]string) int

// Fitted is a copy made to fit a broker's size limit by FitCopy.
type Fitted struct {
	Body    []byte
	Headers map[string]string
	// Trimmed reports that failure headers were shortened or dropped.
	Trimmed bool
	// BodyRemoved reports that the body was replaced by the
	// HeaderBodyRemovedSize and HeaderBodyRemovedSHA256 markers.
	BodyRemoved bool
}

// FitCopy makes a retry or dead-letter copy fit within limit bytes as size
// measures it, for adapters whose broker states a size limit (limit <= 0:
// none). It changes as little as it can, in this order:
//
//  1. the copy as it is, when it fits;
//  2. without HeaderStack, then with HeaderError cut to 512 bytes;
//  3. for a dead-letter copy only (removeBody), with an empty body and the
//     HeaderBodyRemovedSize and HeaderBodyRemovedSHA256 markers, keeping
//     every other header: a dead letter that says what failed and which body
//     it was beats a copy the broker refuses forever.
//
// A retry copy never loses its body. When nothing fits, FitCopy returns an
// error wrapping ErrCopyRefused. body and headers are not modified.
func FitCopy(body []byte, headers map[string]string, limit int, size CopySize, removeBody bool) (Fitted, error) {
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
	if removeBody {
		sum := sha256.Sum256(body)
		f.Headers[HeaderBodyRemovedSize] = strconv.Itoa(len(body))
		f.Headers[HeaderBodyRemovedSHA256] = hex.EncodeToString(sum[:])
		f.Body, f.BodyRemoved = nil, true
		if size(f.Body, f.Headers) <= limit {
			return f, nil
		}
	}
	return Fitted{}, fmt.Errorf("%w: %d bytes over a limit of %d even after trimming", ErrCopyRefused, size(f.Body, f.Headers), limit)
}

// CopyTrimmer is implemented by deliveries whose adapter can trim a retry or
// dead-letter copy to fit the broker's limit (see FitCopy). After a
// successful Retry or DeadLetter the runtime asks it, to count and report
// trimmed copies (Event.Trimmed).
type CopyTrimmer interface {
	// CopyTrimmed reports whether the copy last published for this delivery
	// was trimmed (failure headers shortened or the body removed).
	CopyTrimmed() bool
}
