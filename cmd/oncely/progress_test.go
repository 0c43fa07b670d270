package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
)

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, false)
	p.update(adapters.RedriveProgress{Seen: 1, Total: 10, Redriven: 1})
	p.finish()
	require.Empty(t, b.String(), "runs shorter than a second print nothing")

	p = newProgress(&b, false)
	p.start = time.Now().Add(-2 * time.Second)
	p.update(adapters.RedriveProgress{Seen: 5, Total: 10, Redriven: 4})
	p.update(adapters.RedriveProgress{Seen: 6, Total: 10, Redriven: 5}) // within 200ms: not printed
	p.latest = adapters.RedriveProgress{Seen: 10, Total: 10, Redriven: 8}
	p.finish()
	lines := strings.Split(b.String(), "\r")
	require.Len(t, lines, 3)
	require.Regexp(t, `^\[#{15}\.{15}\] 5/10 4 redriven \(\d+/s\)$`, lines[1])
	require.Regexp(t, `^\[#{30}\] 10/10 8 redriven \(\d+/s\)\n$`, lines[2])

	b.Reset()
	p = newProgress(&b, true)
	p.start = time.Now().Add(-2 * time.Second)
	p.update(adapters.RedriveProgress{Seen: 3, Total: -1, Redriven: 3})
	require.Regexp(t, `^\r3 looked at 3 would redrive`, b.String())
}
