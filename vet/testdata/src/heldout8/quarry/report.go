package quarry

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// spooled is a compressed report built in a scratch file: blast logs run to
// hundreds of thousands of rows, more than we want to hold in memory.
type spooled struct {
	data     []byte
	checksum string
}

func spoolReport(b blast) (spooled, error) {
	f, err := os.CreateTemp("", "blast-*.csv.gz")
	if err != nil {
		return spooled{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()

	zw := gzip.NewWriter(f)
	w := csv.NewWriter(zw)
	if err := w.Write([]string{"hole", "depth_m", "charge_kg", "delay_ms"}); err != nil {
		return spooled{}, err
	}
	for _, h := range b.Holes {
		if err := w.Write([]string{h.ID, fmt.Sprint(h.DepthM), fmt.Sprint(h.ChargeKg), fmt.Sprint(h.DelayMs)}); err != nil {
			return spooled{}, err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return spooled{}, err
	}
	if err := zw.Close(); err != nil {
		return spooled{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return spooled{}, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return spooled{}, err
	}
	sum := sha256.Sum256(data)
	return spooled{data: data, checksum: hex.EncodeToString(sum[:])}, nil
}
