package parquet

import "encoding/binary"

// The element and field types of the Thrift compact protocol, as its headers spell them.
const (
	ctTrue   = 1 // a bool field whose value is true
	ctFalse  = 2 // a bool field whose value is false
	ctByte   = 3
	ctI32    = 5
	ctI64    = 6
	ctBinary = 8
	ctList   = 9
	ctStruct = 12
)

// compact encodes Thrift structs in the compact protocol. A struct's fields are written in
// increasing id order between beginStruct and endStruct; a field's header holds the
// difference to the id of the field before it in the same struct, so each open struct keeps
// its last id on a stack.
type compact struct {
	buf   []byte
	last  int16   // the id of the last field written in the open struct
	outer []int16 // the last ids of the structs that enclose it
}

// uvarint appends v as a ULEB128 varint.
func (c *compact) uvarint(v uint64) {
	c.buf = binary.AppendUvarint(c.buf, v)
}

// varint appends v zigzag-encoded (0, -1, 1, -2, ... as 0, 1, 2, 3, ...) as a varint.
func (c *compact) varint(v int64) {
	c.uvarint(uint64(v<<1) ^ uint64(v>>63))
}

// field appends the header of field id with element type typ.
func (c *compact) field(id int16, typ byte) {
	if d := id - c.last; d > 0 && d <= 15 {
		c.buf = append(c.buf, byte(d)<<4|typ)
	} else {
		c.buf = append(c.buf, typ)
		c.varint(int64(id))
	}
	c.last = id
}

// beginStruct opens a struct whose header, if it has one, is already written: a field's or
// a list's.
func (c *compact) beginStruct() {
	c.outer = append(c.outer, c.last)
	c.last = 0
}

// endStruct writes the stop byte of the open struct and returns to the one enclosing it.
func (c *compact) endStruct() {
	c.buf = append(c.buf, 0)
	c.last = c.outer[len(c.outer)-1]
	c.outer = c.outer[:len(c.outer)-1]
}

// structField opens the struct that is field id of the open struct.
func (c *compact) structField(id int16) {
	c.field(id, ctStruct)
	c.beginStruct()
}

// emptyStructField writes field id as a struct without fields, as a union member that
// carries no value (StringType, NanoSeconds) is.
func (c *compact) emptyStructField(id int16) {
	c.structField(id)
	c.endStruct()
}

func (c *compact) i32Field(id int16, v int32) {
	c.field(id, ctI32)
	c.varint(int64(v))
}

func (c *compact) i64Field(id int16, v int64) {
	c.field(id, ctI64)
	c.varint(v)
}

// byteField writes an i8 field: one byte, not a varint.
func (c *compact) byteField(id int16, v int8) {
	c.field(id, ctByte)
	c.buf = append(c.buf, byte(v))
}

// boolField writes a bool field, whose value is in the type of its header.
func (c *compact) boolField(id int16, v bool) {
	if v {
		c.field(id, ctTrue)
	} else {
		c.field(id, ctFalse)
	}
}

func (c *compact) binaryField(id int16, v []byte) {
	c.field(id, ctBinary)
	c.binary(v)
}

func (c *compact) stringField(id int16, v string) {
	c.field(id, ctBinary)
	c.str(v)
}

// binary appends v as a binary value: its length as a varint, then its bytes.
func (c *compact) binary(v []byte) {
	c.uvarint(uint64(len(v)))
	c.buf = append(c.buf, v...)
}

func (c *compact) str(v string) {
	c.uvarint(uint64(len(v)))
	c.buf = append(c.buf, v...)
}

// listField writes the header of field id, a list of n elements of type elem; the elements
// follow it.
func (c *compact) listField(id int16, elem byte, n int) {
	c.field(id, ctList)
	if n < 15 {
		c.buf = append(c.buf, byte(n)<<4|elem)
	} else {
		c.buf = append(c.buf, 0xf0|elem)
		c.uvarint(uint64(n))
	}
}

// i32List writes field id as a list of i32 values.
func (c *compact) i32List(id int16, vs []int32) {
	c.listField(id, ctI32, len(vs))
	for _, v := range vs {
		c.varint(int64(v))
	}
}

// stringList writes field id as a list of strings.
func (c *compact) stringList(id int16, vs []string) {
	c.listField(id, ctBinary, len(vs))
	for _, v := range vs {
		c.str(v)
	}
}
