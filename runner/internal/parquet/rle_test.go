package parquet

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func repeat(v uint8, n int) []uint8 { return slices.Repeat([]uint8{v}, n) }

// TestHybridBytes checks the hybrid encoding of known values against bytes worked out by
// hand: an RLE run is the varint count<<1 and the value in one byte; a bit-packed run is the
// varint groups<<1|1, then the values, the first in the lowest bits.
func TestHybridBytes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		vs    []uint8
		width int
		want  []byte
	}{
		{"nothing", nil, 1, nil},
		{"ten ones", repeat(1, 10), 1, []byte{0x14, 0x01}},
		{"eight zeros", repeat(0, 8), 1, []byte{0x10, 0x00}},
		{"alternating", []uint8{1, 0, 1, 0, 1, 0, 1, 0}, 1, []byte{0x03, 0x55}},
		{"three, padded", []uint8{1, 0, 1}, 1, []byte{0x03, 0x05}},
		{"seven ones are packed", repeat(1, 7), 1, []byte{0x03, 0x7f}},
		// The example of the format's documentation: 0 to 7 in three bits.
		{"width 3", []uint8{0, 1, 2, 3, 4, 5, 6, 7}, 3, []byte{0x03, 0x88, 0xc6, 0xfa}},
		// Three values waiting to be packed take five of the twenty ones to make a group.
		{"packed then a run", append([]uint8{0, 1, 0}, repeat(1, 20)...), 1, []byte{0x03, 0xfa, 0x1e, 0x01}},
		// A run, then values that are packed, then another run.
		{"run, packed, run", slices.Concat(repeat(0, 9), []uint8{1, 0}, repeat(1, 8)), 1,
			[]byte{0x12, 0x00, 0x03, 0xfd, 0x04, 0x01}},
		{"width 8", []uint8{200, 200, 200, 200, 200, 200, 200, 200, 7}, 8, []byte{0x10, 0xc8, 0x03, 0x07, 0, 0, 0, 0, 0, 0, 0}},
		{"a run of 200", repeat(1, 200), 1, []byte{0x90, 0x03, 0x01}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := appendHybrid(nil, tc.vs, tc.width)
			if !bytes.Equal(got, tc.want) {
				t.Errorf("% x, want % x", got, tc.want)
			}
		})
	}
}

// TestHybridLongPackedRun checks that a bit-packed run is cut at 63 groups: 600 alternating
// values are 75 groups, a run of 63 and one of 12.
func TestHybridLongPackedRun(t *testing.T) {
	vs := make([]uint8, 600)
	for i := range vs {
		vs[i] = uint8(i % 2)
	}
	want := append([]byte{63<<1 | 1}, bytes.Repeat([]byte{0xaa}, 63)...)
	want = append(want, 12<<1|1)
	want = append(want, bytes.Repeat([]byte{0xaa}, 12)...)
	if got := appendHybrid(nil, vs, 1); !bytes.Equal(got, want) {
		t.Errorf("% x\nwant % x", got, want)
	}
}

// decodeHybrid decodes n values of the hybrid encoding, as a reader does.
func decodeHybrid(b []byte, width, n int) ([]uint8, error) {
	var out []uint8
	for len(out) < n {
		h, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, fmt.Errorf("bad header at %d values", len(out))
		}
		b = b[k:]
		if h&1 == 0 {
			if len(b) < 1 {
				return nil, fmt.Errorf("run without a value")
			}
			out = append(out, repeat(b[0], int(h>>1))...)
			b = b[1:]
			continue
		}
		groups := int(h >> 1)
		if len(b) < groups*width {
			return nil, fmt.Errorf("bit-packed run of %d groups in %d bytes", groups, len(b))
		}
		for j := range groups * 8 {
			var v uint8
			for k := range width {
				bit := j*width + k
				v |= (b[bit/8] >> (bit % 8) & 1) << k
			}
			out = append(out, v)
		}
		b = b[groups*width:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d bytes left over", len(b))
	}
	// Padding of the last bit-packed group is not a value.
	return out[:n], nil
}

// TestHybridRoundTrip decodes the encoding of random values, in runs of random lengths, of
// every width.
func TestHybridRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for width := 1; width <= 8; width++ {
		for trial := range 50 {
			var vs []uint8
			for len(vs) < 2000 && rng.IntN(40) != 0 {
				v := uint8(rng.IntN(1 << width))
				vs = append(vs, repeat(v, 1+rng.IntN([]int{3, 12, 100}[rng.IntN(3)]))...)
			}
			enc := appendHybrid(nil, vs, width)
			got, err := decodeHybrid(enc, width, len(vs))
			if err != nil || !slices.Equal(got, vs) {
				t.Fatalf("width %d, trial %d: %v\nin  %v\nout %v", width, trial, err, vs, got)
			}
		}
	}
}
