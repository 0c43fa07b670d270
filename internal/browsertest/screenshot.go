package browsertest

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/color/palette"
	"image/png"
	"os"
	"path/filepath"

	"github.com/chromedp/chromedp"
)

// MaxScreenshotBytes is the most a screenshot file may hold: the images are
// committed to the repository (docs/console-img), so they stay small.
const MaxScreenshotBytes = 150 << 10

// ScreenshotsEnv names the environment variable that turns Shot on: a
// directory (created when missing) the screenshots are written into. Unset,
// Shot does nothing, so ordinary test runs write no files.
const ScreenshotsEnv = "ONCELY_SCREENSHOTS"

// Screenshot saves a PNG of the tab's viewport (Config.Width by
// Config.Height pixels) at path and returns its size in bytes. An image
// over MaxScreenshotBytes is compressed harder, then reduced to a 256-colour
// palette; one still over the limit fails the test.
func (tab *Tab) Screenshot(path string) int {
	tab.t.Helper()
	raw := Run(tab, chromedp.CaptureScreenshot())
	img, err := fitPNG(raw, MaxScreenshotBytes)
	if err != nil {
		tab.t.Fatalf("browsertest: screenshot %s: %v", path, err)
	}
	if err := os.WriteFile(path, img, 0o644); err != nil {
		tab.t.Fatalf("browsertest: %v", err)
	}
	return len(img)
}

// Shot saves a screenshot named name+".png" into the directory that
// ONCELY_SCREENSHOTS names, and does nothing when it is unset: the tests
// that walk through the main pages call it, and a run with the variable set
// regenerates the documentation's images.
func (tab *Tab) Shot(name string) {
	tab.t.Helper()
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tab.t.Fatalf("browsertest: %v", err)
	}
	path := filepath.Join(dir, name+".png")
	n := tab.Screenshot(path)
	tab.t.Logf("browsertest: screenshot %s (%d KB)", path, n>>10)
}

// fitPNG returns the PNG raw, or a re-encoding of it no larger than limit:
// first at the best compression, then reduced to a 256-colour palette
// (nearest colour, no dithering, which keeps text sharp and compresses
// well).
func fitPNG(raw []byte, limit int) ([]byte, error) {
	if len(raw) <= limit {
		return raw, nil
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	var buf bytes.Buffer
	if err := enc.Encode(&buf, img); err != nil {
		return nil, err
	}
	if buf.Len() <= limit {
		return buf.Bytes(), nil
	}
	buf.Reset()
	if err := enc.Encode(&buf, toPaletted(img)); err != nil {
		return nil, err
	}
	if buf.Len() > limit {
		return nil, fmt.Errorf("%d bytes even with a 256-colour palette, over the limit of %d", buf.Len(), limit)
	}
	return buf.Bytes(), nil
}

// toPaletted maps img onto the Plan 9 palette, each pixel to its nearest
// colour. A page has few distinct colours, so each is looked up once.
func toPaletted(img image.Image) *image.Paletted {
	r := img.Bounds()
	pal := image.NewPaletted(r, palette.Plan9)
	index := map[color.RGBA64]uint8{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.RGBA64Model.Convert(img.At(x, y)).(color.RGBA64)
			i, ok := index[c]
			if !ok {
				i = uint8(pal.Palette.Index(c))
				index[c] = i
			}
			pal.SetColorIndex(x, y, i)
		}
	}
	return pal
}
