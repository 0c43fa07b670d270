package browsertest

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"
)

// TestFitPNG: an image over the limit comes back under it, with its size
// kept; one that cannot fit is an error, never a file over the limit.
func TestFitPNG(t *testing.T) {
	encode := func(img image.Image) []byte {
		var buf bytes.Buffer
		if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	// A page-like image: text-like marks on a light background with a
	// little noise in each channel (as anti-aliasing and gradients give),
	// which only the palette compresses under the limit.
	const w, h = 400, 300
	rng := rand.New(rand.NewPCG(1, 2))
	page := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			n := uint8(rng.IntN(12))
			c := color.RGBA{240 + n, 240 + n/2, 240 + n/3, 255}
			if y%40 < 14 && x%9 < 6 {
				c = color.RGBA{30, 30, 60, 255}
			}
			page.Set(x, y, c)
		}
	}
	raw := encode(page)
	const limit = 50 << 10
	if len(raw) <= limit {
		t.Fatalf("test image of %d bytes is under the limit already", len(raw))
	}
	out, err := fitPNG(raw, limit)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(out))
	if len(out) > limit || err != nil || cfg.Width != w || cfg.Height != h {
		t.Fatalf("fitPNG: %d bytes, %dx%d, %v", len(out), cfg.Width, cfg.Height, err)
	}
	if _, ok := cfg.ColorModel.(color.Palette); !ok {
		t.Fatalf("fitPNG kept colour model %T: the test image should need the palette", cfg.ColorModel)
	}

	// Noise compresses to nothing smaller, even in 256 colours.
	noise := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range noise.Pix {
		noise.Pix[i] = byte(rng.Uint32())
	}
	if out, err := fitPNG(encode(noise), limit); err == nil {
		t.Fatalf("fitPNG of noise: %d bytes and no error", len(out))
	}
}
