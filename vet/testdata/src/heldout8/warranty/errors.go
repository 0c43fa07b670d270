package warranty

import (
	"fmt"
	"sort"
	"strings"
)

// batchFailure names the messages of a batch that could not be decoded.
type batchFailure map[int]error

func (b batchFailure) Error() string {
	idx := make([]int, 0, len(b))
	for i := range b {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	parts := make([]string, len(idx))
	for n, i := range idx {
		parts[n] = fmt.Sprintf("#%d: %v", i, b[i])
	}
	return "undecodable claims: " + strings.Join(parts, "; ")
}

func failedOnes(m map[int]error) error { return batchFailure(m) }
