package gguf

import (
	"math"
	"testing"
)

func TestHalfFromFloat32(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.5, 0x3800},
		{65504, 0x7bff},                 // largest finite half
		{65519.99, 0x7bff},              // rounds down to it
		{65520, 0x7c00},                 // the tie rounds to even: infinity
		{1e10, 0x7c00},                  // overflow
		{-1e10, 0xfc00},                 // negative overflow
		{6.1035156e-05, 0x0400},         // smallest normal, 2⁻¹⁴
		{5.9604645e-08, 0x0001},         // smallest subnormal, 2⁻²⁴
		{2.9802322e-08, 0x0000},         // 2⁻²⁵ is a tie between 0 and 2⁻²⁴: even wins
		{2.9802326e-08, 0x0001},         // just above the tie rounds up
		{1e-10, 0x0000},                 // underflow
		{0.1, 0x2e66},                   // 0.0999755859375
		{1.0 / 3, 0x3555},               // 0.333251953125
		{1.0009765625, 0x3c01},          // 1 + 2⁻¹⁰, exact
		{1.00048828125, 0x3c00},         // 1 + 2⁻¹¹, tie, even is 1
		{1.00146484375, 0x3c02},         // 1 + 3·2⁻¹¹, tie, even is 1 + 2⁻⁹
		{float32(math.Inf(1)), 0x7c00},  // infinity
		{float32(math.Inf(-1)), 0xfc00}, // negative infinity
		{-64, 0xd400},                   // the banned-token weight
		{16, 0x4c00},                    // the default anchor
		{3.0517578e-05, 0x0200},         // a subnormal, 2⁻¹⁵
		{float32(math.NaN()), 0x7e00},   // NaN stays NaN
		{-6.1035156e-05 * 0.75, 0x8300}, // negative subnormal
		{8.940697e-08, 0x0002},          // 1.5·2⁻²⁴, tie, even is 2·2⁻²⁴
		{1.4901161e-07, 0x0002},         // 2.5·2⁻²⁴, tie, even is 2·2⁻²⁴
		{6.1005354e-05, 0x0400},         // just below 2⁻¹⁴ rounds up into the normals
		{-0.33325195, 0xb555},           // negative exact
		{2048.5, 0x6800},                // spacing is 2 here: nearer to 2048
		{2049, 0x6800},                  // 2049 is a tie between 2048 and 2050: even mantissa is 2048
		{2051, 0x6802},                  // tie between 2050 and 2052: 2052 has the even mantissa
		{32768 + 16, 0x7800},            // tie at exponent 15, rounds to even
		{float32(math.Nextafter32(65520, 0)), 0x7bff},
	}
	for _, tt := range tests {
		if got := HalfFromFloat32(tt.in); got != tt.want {
			t.Errorf("HalfFromFloat32(%g) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
}

// TestHalfExhaustive converts every half to float32 and back: the result must be the same bits
// (NaNs excepted: they only have to stay NaN), and float32 values must be monotonic in the bits.
func TestHalfExhaustive(t *testing.T) {
	for h := range 1 << 16 {
		f := Float32FromHalf(uint16(h))
		if math.IsNaN(float64(f)) {
			if uint16(h)&0x7c00 != 0x7c00 || uint16(h)&0x3ff == 0 {
				t.Fatalf("Float32FromHalf(%#04x) is NaN", h)
			}
			if back := HalfFromFloat32(f); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back := HalfFromFloat32(f); back != uint16(h) {
			t.Fatalf("half %#04x -> %g -> %#04x", h, f, back)
		}
		// Within the positive finite halves, a larger bit pattern is a larger number.
		if h > 0 && h < 0x7c00 && !(Float32FromHalf(uint16(h-1)) < f) {
			t.Fatalf("half %#04x = %g is not above %#04x", h, f, h-1)
		}
	}
}

// TestHalfRoundsToNearest checks, between every pair of neighbouring positive halves, that
// values on either side of the midpoint go to the nearer one.
func TestHalfRoundsToNearest(t *testing.T) {
	for h := uint16(0); h < 0x7bff; h++ {
		lo, hi := Float32FromHalf(h), Float32FromHalf(h+1)
		mid := lo + (hi-lo)/2 // exact in float32: halves have 11 significant bits
		below := math.Nextafter32(mid, lo)
		above := math.Nextafter32(mid, hi)
		if got := HalfFromFloat32(below); got != h {
			t.Fatalf("%g (just below the midpoint of %#04x and %#04x) -> %#04x", below, h, h+1, got)
		}
		if got := HalfFromFloat32(above); got != h+1 {
			t.Fatalf("%g (just above the midpoint of %#04x and %#04x) -> %#04x", above, h, h+1, got)
		}
		even := h
		if h&1 == 1 {
			even = h + 1
		}
		if got := HalfFromFloat32(mid); got != even {
			t.Fatalf("midpoint %g of %#04x and %#04x -> %#04x, want the even %#04x", mid, h, h+1, got, even)
		}
	}
}
