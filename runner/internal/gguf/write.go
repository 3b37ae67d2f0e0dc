package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Write encodes f as a GGUF v3 file to w. Tensor offsets are computed here: every tensor starts
// at a multiple of the file's alignment, and the gaps are zero bytes.
func Write(w io.Writer, f *File) error {
	align, err := f.Alignment()
	if err != nil {
		return err
	}
	head := make([]byte, 0, 1<<16)
	head = append(head, Magic...)
	head = binary.LittleEndian.AppendUint32(head, Version)
	head = binary.LittleEndian.AppendUint64(head, uint64(len(f.Tensors)))
	head = binary.LittleEndian.AppendUint64(head, uint64(len(f.KV)))
	for _, kv := range f.KV {
		head = appendString(head, kv.Key)
		if head, err = appendValue(head, kv.Value); err != nil {
			return fmt.Errorf("write %s: %w", kv.Key, err)
		}
	}
	offsets := make([]uint64, len(f.Tensors))
	var off uint64
	for i := range f.Tensors {
		t := &f.Tensors[i]
		size := t.Type.ElemSize()
		if size == 0 {
			return fmt.Errorf("write tensor %s: unsupported type %s", t.Name, t.Type)
		}
		if len(t.Dims) == 0 || len(t.Dims) > 4 {
			return fmt.Errorf("write tensor %s: %d dimensions, want 1 to 4", t.Name, len(t.Dims))
		}
		if want := t.Elements() * uint64(size); uint64(len(t.Data)) != want {
			return fmt.Errorf("write tensor %s: %d data bytes, want %d for %v %s", t.Name, len(t.Data), want, t.Dims, t.Type)
		}
		off = alignUp(off, uint64(align))
		offsets[i] = off
		off += uint64(len(t.Data))
		head = appendString(head, t.Name)
		head = binary.LittleEndian.AppendUint32(head, uint32(len(t.Dims)))
		for _, d := range t.Dims {
			head = binary.LittleEndian.AppendUint64(head, d)
		}
		head = binary.LittleEndian.AppendUint32(head, uint32(t.Type))
		head = binary.LittleEndian.AppendUint64(head, offsets[i])
	}
	pad := alignUp(uint64(len(head)), uint64(align)) - uint64(len(head))
	head = append(head, make([]byte, pad)...)

	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(head); err != nil {
		return fmt.Errorf("write header: %w", err)
	}
	var pos uint64
	zeros := make([]byte, align)
	for i := range f.Tensors {
		if _, err := bw.Write(zeros[:offsets[i]-pos]); err != nil {
			return fmt.Errorf("write padding: %w", err)
		}
		if _, err := bw.Write(f.Tensors[i].Data); err != nil {
			return fmt.Errorf("write tensor %s: %w", f.Tensors[i].Name, err)
		}
		pos = offsets[i] + uint64(len(f.Tensors[i].Data))
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// appendValue appends the type tag and the encoding of v.
func appendValue(b []byte, v any) ([]byte, error) {
	t, err := typeOf(v)
	if err != nil {
		return b, err
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(t))
	if t != TypeArray {
		return appendScalar(b, v), nil
	}
	elem, n, each := arrayParts(v)
	b = binary.LittleEndian.AppendUint32(b, uint32(elem))
	b = binary.LittleEndian.AppendUint64(b, uint64(n))
	for i := range n {
		b = appendScalar(b, each(i))
	}
	return b, nil
}

// typeOf maps a Go value to its GGUF value type.
func typeOf(v any) (ValueType, error) {
	switch v.(type) {
	case uint8:
		return TypeUint8, nil
	case int8:
		return TypeInt8, nil
	case uint16:
		return TypeUint16, nil
	case int16:
		return TypeInt16, nil
	case uint32:
		return TypeUint32, nil
	case int32:
		return TypeInt32, nil
	case float32:
		return TypeFloat32, nil
	case bool:
		return TypeBool, nil
	case string:
		return TypeString, nil
	case uint64:
		return TypeUint64, nil
	case int64:
		return TypeInt64, nil
	case float64:
		return TypeFloat64, nil
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32, []bool, []string, []uint64, []int64, []float64:
		return TypeArray, nil
	}
	return 0, fmt.Errorf("unsupported value type %T", v)
}

// arrayParts returns an array's element type, length and element accessor.
func arrayParts(v any) (ValueType, int, func(int) any) {
	switch a := v.(type) {
	case []uint8:
		return TypeUint8, len(a), func(i int) any { return a[i] }
	case []int8:
		return TypeInt8, len(a), func(i int) any { return a[i] }
	case []uint16:
		return TypeUint16, len(a), func(i int) any { return a[i] }
	case []int16:
		return TypeInt16, len(a), func(i int) any { return a[i] }
	case []uint32:
		return TypeUint32, len(a), func(i int) any { return a[i] }
	case []int32:
		return TypeInt32, len(a), func(i int) any { return a[i] }
	case []float32:
		return TypeFloat32, len(a), func(i int) any { return a[i] }
	case []bool:
		return TypeBool, len(a), func(i int) any { return a[i] }
	case []string:
		return TypeString, len(a), func(i int) any { return a[i] }
	case []uint64:
		return TypeUint64, len(a), func(i int) any { return a[i] }
	case []int64:
		return TypeInt64, len(a), func(i int) any { return a[i] }
	case []float64:
		return TypeFloat64, len(a), func(i int) any { return a[i] }
	}
	panic(fmt.Sprintf("gguf: arrayParts of %T", v))
}

// appendScalar appends the encoding of a non-array value without its type tag.
func appendScalar(b []byte, v any) []byte {
	le := binary.LittleEndian
	switch x := v.(type) {
	case uint8:
		return append(b, x)
	case int8:
		return append(b, byte(x))
	case uint16:
		return le.AppendUint16(b, x)
	case int16:
		return le.AppendUint16(b, uint16(x))
	case uint32:
		return le.AppendUint32(b, x)
	case int32:
		return le.AppendUint32(b, uint32(x))
	case float32:
		return le.AppendUint32(b, math.Float32bits(x))
	case bool:
		if x {
			return append(b, 1)
		}
		return append(b, 0)
	case string:
		return appendString(b, x)
	case uint64:
		return le.AppendUint64(b, x)
	case int64:
		return le.AppendUint64(b, uint64(x))
	case float64:
		return le.AppendUint64(b, math.Float64bits(x))
	}
	panic(fmt.Sprintf("gguf: appendScalar of %T", v))
}
