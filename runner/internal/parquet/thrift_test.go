package parquet

import (
	"bytes"
	"math"
	"testing"
)

// TestCompact checks the compact protocol encoding of known values against bytes worked out
// by hand from the protocol's rules: a field header is the id's difference to the last id in
// the high nibble and the type in the low one, or the type then the id as a zigzag varint
// when the difference is not 1 to 15; integers are zigzag varints; a struct ends with a zero.
func TestCompact(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(c *compact)
		want  []byte
	}{
		{"empty struct", func(c *compact) {}, []byte{0x00}},
		{"i32 1", func(c *compact) { c.i32Field(1, 1) }, []byte{0x15, 0x02, 0x00}},
		{"i32 -1", func(c *compact) { c.i32Field(1, -1) }, []byte{0x15, 0x01, 0x00}},
		// 300 zigzags to 600 = 0b100_1011000: 0x58 with the continuation bit, then 0x04.
		{"i32 300", func(c *compact) { c.i32Field(1, 300) }, []byte{0x15, 0xd8, 0x04, 0x00}},
		{"i32 max", func(c *compact) { c.i32Field(1, math.MaxInt32) },
			[]byte{0x15, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0x00}},
		{"i64 after a gap", func(c *compact) { c.i32Field(1, 0); c.i64Field(3, -2) },
			[]byte{0x15, 0x00, 0x26, 0x03, 0x00}},
		{"i64 min", func(c *compact) { c.i64Field(1, math.MinInt64) },
			[]byte{0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00}},
		// Field 20 is 20 past field 0: the long form, type then zigzag(20) = 40.
		{"string, long header", func(c *compact) { c.stringField(20, "ab") },
			[]byte{0x08, 0x28, 0x02, 'a', 'b', 0x00}},
		{"id going down", func(c *compact) { c.i32Field(5, 0); c.i32Field(2, 0) },
			[]byte{0x55, 0x00, 0x05, 0x04, 0x00, 0x00}},
		{"delta of 15", func(c *compact) { c.i32Field(15, 0) }, []byte{0xf5, 0x00, 0x00}},
		{"delta of 16", func(c *compact) { c.i32Field(16, 0) }, []byte{0x05, 0x20, 0x00, 0x00}},
		{"bools", func(c *compact) { c.boolField(1, true); c.boolField(2, false) }, []byte{0x11, 0x12, 0x00}},
		{"i8", func(c *compact) { c.byteField(1, 64); c.byteField(2, -1) }, []byte{0x13, 0x40, 0x13, 0xff, 0x00}},
		{"binary", func(c *compact) { c.binaryField(1, []byte{0xff, 0x00}) }, []byte{0x18, 0x02, 0xff, 0x00, 0x00}},
		{"empty binary", func(c *compact) { c.binaryField(1, nil) }, []byte{0x18, 0x00, 0x00}},
		{"empty struct field", func(c *compact) { c.emptyStructField(1) }, []byte{0x1c, 0x00, 0x00}},
		// The nested structs count their ids from zero, and the outer one goes on from 10.
		{"nested structs", func(c *compact) {
			c.structField(10)
			c.structField(10)
			c.byteField(1, 64)
			c.boolField(2, true)
			c.endStruct()
			c.endStruct()
			c.i32Field(11, 7)
		}, []byte{0xac, 0xac, 0x13, 0x40, 0x11, 0x00, 0x00, 0x15, 0x0e, 0x00}},
		{"i32 list", func(c *compact) { c.i32List(2, []int32{0, 3}) }, []byte{0x29, 0x25, 0x00, 0x06, 0x00}},
		{"string list", func(c *compact) { c.stringList(3, []string{"a", ""}) },
			[]byte{0x39, 0x28, 0x01, 'a', 0x00, 0x00}},
		{"empty list", func(c *compact) { c.i32List(1, nil) }, []byte{0x19, 0x05, 0x00}},
		// 15 elements and more: 0xf in the size nibble, then the size as a varint.
		{"long list", func(c *compact) { c.i32List(1, make([]int32, 15)) },
			append([]byte{0x19, 0xf5, 0x0f}, append(make([]byte, 15), 0x00)...)},
		{"struct list", func(c *compact) {
			c.listField(1, ctStruct, 2)
			c.beginStruct()
			c.i32Field(1, 1)
			c.endStruct()
			c.beginStruct()
			c.endStruct()
			c.i32Field(2, 1)
		}, []byte{0x19, 0x2c, 0x15, 0x02, 0x00, 0x00, 0x15, 0x02, 0x00}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c compact
			c.beginStruct()
			tc.write(&c)
			c.endStruct()
			if !bytes.Equal(c.buf, tc.want) {
				t.Errorf("% x, want % x", c.buf, tc.want)
			}
			if len(c.outer) != 0 {
				t.Errorf("%d structs left open", len(c.outer))
			}
		})
	}
}
