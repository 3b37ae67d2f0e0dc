package parquet

import "encoding/binary"

// maxPackedGroups bounds the groups of eight values in one bit-packed run, so that its
// header fits in one byte, as the format's reference writers keep it.
const maxPackedGroups = 63

// appendHybrid appends vs, each below 1<<width, in Parquet's RLE/bit-packed hybrid encoding
// of the given bit width (1 to 8), without the length prefix that data pages put before it.
// A value repeated eight times or more is written as an RLE run; the values between such
// runs are bit-packed in groups of eight, and only the last group of all is padded with
// zeros, since a reader knows how many values there are.
func appendHybrid(dst []byte, vs []uint8, width int) []byte {
	var packed []uint8 // values waiting to be bit-packed
	for i := 0; i < len(vs); {
		run := 1
		for i+run < len(vs) && vs[i+run] == vs[i] {
			run++
		}
		if run < 8 {
			packed = append(packed, vs[i:i+run]...)
			i += run
			continue
		}
		// A bit-packed run holds whole groups of eight, so the values waiting for one are
		// made a multiple of eight with the first of the repeated ones.
		if k := len(packed) % 8; k != 0 {
			packed = append(packed, vs[i:i+8-k]...)
			i += 8 - k
			run -= 8 - k
		}
		dst = appendPacked(dst, packed, width)
		packed = packed[:0]
		dst = binary.AppendUvarint(dst, uint64(run)<<1)
		dst = append(dst, vs[i]) // the value in ceil(width/8) bytes: one, for widths up to 8
		i += run
	}
	return appendPacked(dst, packed, width)
}

// appendPacked appends vs as bit-packed runs: each a header, the number of groups of eight
// shifted left once with the low bit set, then the values' low width bits, the first value
// in the lowest bits of the first byte. The last group is padded with zeros.
func appendPacked(dst []byte, vs []uint8, width int) []byte {
	for len(vs) > 0 {
		groups := min((len(vs)+7)/8, maxPackedGroups)
		n := min(len(vs), groups*8)
		dst = binary.AppendUvarint(dst, uint64(groups)<<1|1)
		start := len(dst)
		dst = append(dst, make([]byte, groups*width)...)
		out := dst[start:]
		for j, v := range vs[:n] {
			bit := j * width
			x := uint16(v) << (bit % 8)
			out[bit/8] |= byte(x)
			if bit%8+width > 8 {
				out[bit/8+1] |= byte(x >> 8)
			}
		}
		vs = vs[n:]
	}
	return dst
}
